// A small stand-in for AgentV's grader SDK (`@agentv/eval`, later `@agentv/sdk`, in v5 `agentv`), written for
// convoeval's tests: AgentV's TypeScript graders import it, and it is not on npm. It follows the
// SDK's contract: read the grading input as JSON on stdin, pass it (keys in camelCase) to the
// handler, print the handler's result as JSON on stdout; an exception scores 0 and exits 1.
import { readFileSync } from 'node:fs';

const camel = (key) => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

function toCamelCaseDeep(value) {
  if (Array.isArray(value)) return value.map(toCamelCaseDeep);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), toCamelCaseDeep(v)]));
  }
  return value;
}

function readInput() {
  return toCamelCaseDeep(JSON.parse(readFileSync(0, 'utf8')));
}

function clamp(score) {
  return Number.isFinite(score) ? Math.max(0, Math.min(1, score)) : 0;
}

async function run(handler, toResult) {
  try {
    const result = toResult(await handler(readInput()));
    console.log(JSON.stringify(result, null, 2));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.log(JSON.stringify({ score: 0, assertions: [{ text: `Evaluation failed: ${message}`, passed: false }] }));
    process.exit(1);
  }
}

export function defineCodeGrader(handler) {
  return run(handler, (r) => ({ ...r, score: clamp(r.score) }));
}

export const defineCodeJudge = defineCodeGrader;

// AgentV v5 (`agentv`): `defineScriptGrader` prints {pass?, score, reason?, checks?}; a failure
// prints pass false, score 0 and one failed check, and exits 1 (its script-grader-runtime.ts).
export async function defineScriptGrader(handler) {
  try {
    const r = await handler(readInput());
    console.log(JSON.stringify({ ...r, score: clamp(r.score) }, null, 2));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const checks = [{ text: 'Script grader execution', pass: false, reason: message }];
    console.log(JSON.stringify({ pass: false, score: 0, reason: `Evaluation failed: ${message}`, checks }));
    process.exit(1);
  }
}

export function defineAssertion(handler) {
  return run(handler, (r) => ({ ...r, score: clamp(r.score ?? (r.pass ? 1 : 0)) }));
}

export async function definePromptTemplate(handler) {
  try {
    console.log(await handler(readInput()));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}

// AgentV's own clients of its grader proxy, unchanged: `target-client.ts` (v4.42.4, the same from
// v4.15 to v5.3) and `provider-client.ts` (main, after v5.3), which the tests copy beside this file
// from tests/data/agentv/.
export { createTargetClient } from './target-client.ts';
export { createProviderClient } from './provider-client.ts';

// AgentV's SDK re-exports zod's `z` for graders' config schemas (zod itself comes from npm).
export { z } from "zod";
