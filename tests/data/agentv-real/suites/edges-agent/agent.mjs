// A stand-in agent for AgentV's `cli` provider: writes `{"output": [assistant message with
// tool_calls]}` to --output; its calls are always the same four, whatever the prompt.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { prompt: { type: "string" }, output: { type: "string" } } });
const calls = [
  { tool: "search", input: { q: "x", limit: 5 } },
  { tool: "fetch", input: { id: 1, opts: { deep: true } } },
  { tool: "search", input: { q: "y" } },
  { tool: "save", input: { path: "/tmp/o" } },
];
const answer = { output: [{ role: "assistant", content: "Done: searched, fetched and saved.", tool_calls: calls }] };
writeFileSync(values.output, JSON.stringify(answer));
