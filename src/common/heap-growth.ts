import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets a worker's heap grow past what survived the last full collection before it
 * collects again, in percent: 50, i.e. to 1.5 times. V8 picks up to 4 times by itself, and keeps
 * what it committed: in bench scenario 4 a burst of attempts took the worker's heap from 87 to
 * 189 MB committed with 65 MB alive, and its RSS stayed there with the backlog waiting
 * (docs/PERFORMANCE.md, change 14). Full collections come sooner and cost a little CPU; a worker
 * holds little that lives long, so each is short.
 */
export const WORKER_HEAP_GROWING_PERCENT = 50;

/**
 * Sets V8's heap growing factor for this process, unless the operator chose one with node's
 * flags or NODE_OPTIONS. Answers whether it did.
 */
export function limitHeapGrowth(percent = WORKER_HEAP_GROWING_PERCENT, nodeFlags = [...process.execArgv, process.env.NODE_OPTIONS ?? '']): boolean {
  if (nodeFlags.some((flag) => flag.includes('heap-growing-percent'))) return false;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  return true;
}
