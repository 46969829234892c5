import { eraseResponses } from './src/erase/index.ts';
const t0 = Date.now();
const r = await eraseResponses({ output: '/tmp/erase-bench/c', choice: { responses: ['ea246654-5736-442c-adb3-41168003d7f1'] } });
console.log('total', Date.now() - t0, JSON.stringify(r.erasure.runs));
