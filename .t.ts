import { eraseResponses } from '/work/wt-erase/src/erase/index.ts';
const t0 = Date.now();
const orig = console.log;
const r = await eraseResponses({ output: '/tmp/erase-play/out/demo', choice: { responses: ['ec757c38-9357-49eb-957e-2950be907852'] } });
console.log('total', Date.now() - t0, JSON.stringify(r.erasure.runs));
