// A stand-in agent for AgentV's `cli` provider that reports what it spent: each call's
// duration_ms, the turn's token_usage, cost_usd and duration_ms. Always the same answer.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { prompt: { type: "string" }, output: { type: "string" } } });
const calls = [
  { tool: "search", input: { q: "x" }, duration_ms: 120 },
  { tool: "fetch", input: { id: 1 }, duration_ms: 900 },
  { tool: "save", input: { path: "/tmp/o" } },
];
const answer = {
  output: [{ role: "assistant", content: "Done: 3 calls.", tool_calls: calls }],
  token_usage: { input: 400, output: 100 },
  cost_usd: 0.02,
  duration_ms: 1500,
};
writeFileSync(values.output, JSON.stringify(answer));
