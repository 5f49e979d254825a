// A composite's code-grader aggregator: reads {results} on stdin; its answer depends on config.
import { readFileSync } from "node:fs";
const input = JSON.parse(readFileSync(0, "utf-8"));
const mode = process.argv[2];
const scores = Object.values(input.results).map((r) => r.score);
if (mode === "verdict-fail") {
  console.log(JSON.stringify({ score: 0.9, verdict: "fail", assertions: [{ text: "vetoed", passed: false }] }));
} else if (mode === "shape") {
  // 1 when every member result carries AgentV 4.42's `assertions` list, 0.5 with v4.15's hits only
  const all = Object.values(input.results);
  const score = all.every((r) => Array.isArray(r.assertions)) ? 1 : all.every((r) => Array.isArray(r.hits)) ? 0.5 : 0;
  console.log(JSON.stringify({ score, assertions: [{ text: "shape", passed: score === 1 }] }));
} else if (mode === "crash") {
  process.exit(2);
} else if (mode === "min") {
  console.log(JSON.stringify({ score: Math.min(...scores), assertions: [{ text: "min", passed: true }] }));
} else {
  console.log("not json");
}
