// The worker bridge's async half (see s3-storage.js): a worker thread that runs the S3
// operations (s3-ops.js), one request at a time, answers on its port and wakes the blocked
// caller through the shared signal.
import { workerData, parentPort } from 'node:worker_threads';
import { s3Ops } from './s3-ops.js';

const { port, signal: signalBuffer, config } = workerData;
const signal = new Int32Array(signalBuffer);
const { run, counts } = s3Ops(config);

parentPort.on('message', async ({ op, args }) => {
  let reply;
  try {
    reply = { value: op === 'counts' ? { ...counts } : await run(op, args) };
  } catch (error) {
    reply = { error };
  }
  port.postMessage(reply);
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
});
