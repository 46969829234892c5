/** Reading the example files in examples/ the way GitHub Actions and a shell would run them. */

/** A step of a GitHub Actions job. */
export interface WorkflowStep {
  name?: string;
  id?: string;
  uses?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, string>;
}

/** Words of a one-line shell command: "..." quoting and $VAR expansion, nothing more. */
export function shellWords(command: string, env: Record<string, string>): string[] {
  const words: string[] = [];
  for (const match of command.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)) {
    const word = (match[1] ?? match[2])!;
    words.push(word.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, name: string) => env[name] ?? ''));
  }
  return words;
}

/** Fills in GitHub expressions (${{ matrix.shard }} and the like) from a table; an unknown one fails. */
export function githubExpand(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, expression: string) => {
    const value = values[expression];
    if (value === undefined) throw new Error(`no test value for \${{ ${expression} }}`);
    return value;
  });
}

/** The one line of a step's script that runs `study-export <command>`, without `|| code=$?`. */
export function commandLine(run: string, command: string): string {
  const line = run.split('\n').find((text) => text.includes(`study-export ${command}`));
  if (line === undefined) throw new Error(`no "study-export ${command}" line in the step`);
  return line.replace(/\s*\|\|.*$/, '').trim();
}
