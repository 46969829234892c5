/** `study-export verify RUN_DIR`: re-check a finished run; every problem named, exit 0 or 1
 * (2, as any usage error, when RUN_DIR is not a run: report.ts). */
import type { CommandModule } from 'yargs';
import type { BagCheck } from '../../archive/verify.ts';
import { exitCodes } from '../../errors.ts';
import type { ProjectCheck } from '../../qdpx/verify.ts';
import type { PackageCheck } from '../../share/verify.ts';
import type { CliContext } from '../context.ts';
import { verifyExitCode } from '../report.ts';

interface VerifyArgs {
  run_dir: string;
  endpoint?: string;
}

export function verifyCommand(context: CliContext): CommandModule<object, VerifyArgs> {
  return {
    command: 'verify <run_dir>',
    describe:
      'Re-check a finished run (sha256 of every file, row counts, keys, foreign keys, the zip), a bag made by archive, a package made by share (folder or zip), or a .qdpx; a package made with a privacy profile must hold no personal data the detectors find',
    builder: (yargs) =>
      yargs
        .positional('run_dir', {
          type: 'string',
          describe:
            'the run directory, e.g. out/demo/runs/20261121T235500Z, or s3://bucket/prefix/demo/runs/<run id>',
        })
        .option('endpoint', {
          type: 'string',
          requiresArg: true,
          describe:
            'for an s3:// run on an S3-compatible server: its URL (as output.s3.endpoint; AWS_ENDPOINT_URL also works)',
        })
        .demandOption('run_dir') as never,
    handler: async (args) => {
      const s3 = args.endpoint ? { endpoint: args.endpoint } : {};
      if (/\.qdpx$/i.test(args.run_dir)) {
        const { verifyProject } = await import('../../qdpx/verify.ts');
        reportProject(context, args.run_dir, await verifyProject(args.run_dir, s3));
        return;
      }
      const { isBag, verifyBag } = await import('../../archive/verify.ts');
      if (await isBag(args.run_dir, s3)) {
        reportBag(context, args.run_dir, await verifyBag(args.run_dir, s3));
        return;
      }
      const { isSharePackage, verifySharePackage } = await import('../../share/verify.ts');
      if (await isSharePackage(args.run_dir, s3)) {
        reportPackage(context, args.run_dir, await verifySharePackage(args.run_dir, s3));
        return;
      }
      const { verifyRun } = await import('../../load/verify.ts');
      const { locateRunDir } = await import('../../output/manifest.ts');
      const runDir = await locateRunDir(args.run_dir);
      const result = await verifyRun(runDir, args.endpoint ? { endpoint: args.endpoint } : {});
      const { files, tables, rows, zipEntries } = result.checked;
      const checked = `${files} files, ${tables} tables, ${rows} rows, ${zipEntries} zip entries`;
      for (const note of result.notes) context.stdout.write(`note: ${note}\n`);
      if (result.ok) {
        context.stdout.write(`${args.run_dir}: ok (checked ${checked})\n`);
        return;
      }
      reportProblems(context, args.run_dir, result.problems, checked);
    },
  };
}

/** A project's check: personal data left in a de-identified project fails it (exit 1). */
function reportProject(context: CliContext, location: string, check: ProjectCheck): void {
  if (check.leftovers.length === 0) {
    context.stdout.write(
      `${location}: ${check.deidentified ? 'no personal data the detectors find' : 'identified (made without a privacy profile); not scanned'}\n`,
    );
    return;
  }
  for (const left of check.leftovers)
    context.stdout.write(
      `problem: ${left.file}: ${left.count} ${left.kind} match${left.count === 1 ? '' : 'es'} left, though the project was made with a privacy profile\n`,
    );
  context.stderr.write(
    `study-export: ${location}: ${check.leftovers.length} problem${check.leftovers.length === 1 ? '' : 's'}\n`,
  );
  context.exitCode = verifyExitCode(check.leftovers.length);
}

/** A run's, package's or bag's problems, one a line, and the count on stderr: verify fails (exit 1). */
function reportProblems(
  context: CliContext,
  location: string,
  problems: readonly string[],
  checked: string,
): void {
  context.stdout.write(`${problems.map((problem) => `problem: ${problem}`).join('\n')}\n`);
  context.stderr.write(
    `study-export: ${location}: ${problems.length} problem${problems.length === 1 ? '' : 's'} (checked ${checked})\n`,
  );
  context.exitCode = verifyExitCode(problems.length);
}

/** A share package's check: problems, personal data left under a profile among them, fail it (exit 1). */
function reportPackage(context: CliContext, location: string, check: PackageCheck): void {
  const checked = `${check.checked.files} files, ${check.checked.bytes} bytes`;
  if (!check.ok) {
    reportProblems(context, location, check.problems, checked);
    return;
  }
  context.stdout.write(
    `${location}: a valid package (checked ${checked}; ${check.deidentified ? 'no personal data the detectors find' : 'identified, not scanned'})\n`,
  );
}

/** A bag's check: problems fail it (exit 1); recordings it lists as missing make it partial (3). */
function reportBag(context: CliContext, location: string, check: BagCheck): void {
  const checked = `${check.checked.files} files, ${check.checked.bytes} payload bytes`;
  for (const note of check.notes) context.stdout.write(`note: ${note}\n`);
  if (!check.ok) {
    reportProblems(context, location, check.problems, checked);
    return;
  }
  context.stdout.write(`${location}: a valid bag (checked ${checked})\n`);
  if (check.missing > 0) {
    context.stderr.write(
      `study-export: ${location}: ${check.missing} recording(s) missing from the bag (notes above)\n`,
    );
    context.exitCode = exitCodes.partial;
  }
}
