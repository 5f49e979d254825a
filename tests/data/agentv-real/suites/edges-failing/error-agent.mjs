// A failing agent for AgentV's `cli` provider: exits 3 when the prompt says "exit", else answers
// with an `error` field (AgentV's cli provider reads it as a failed call).
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
const { values } = parseArgs({ options: { prompt: { type: "string" }, output: { type: "string" } } });
if (values.prompt.includes("exit")) process.exit(3);
writeFileSync(values.output, JSON.stringify({ error: "backend down", output: [{ role: "assistant", content: "partial" }] }));
