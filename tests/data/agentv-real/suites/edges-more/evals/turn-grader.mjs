// A code-grader: 1.0 when the graded output names "Goodbye", 0.5 when it names "Hello", else 0;
// it also reports how many messages it was given.
import { readFileSync } from "node:fs";
const input = JSON.parse(readFileSync(0, "utf-8"));
const text = typeof input.output === "string" ? input.output : JSON.stringify(input.output);
const score = text.includes("Goodbye") ? 1 : text.includes("Hello") ? 0.5 : 0;
const n = Array.isArray(input.messages) ? input.messages.length : -1;
console.log(JSON.stringify({ score, assertions: [{ text: `messages=${n}`, passed: score > 0 }] }));
