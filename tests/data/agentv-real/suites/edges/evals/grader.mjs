// A code-grader answering as `config.mode` says, to compare how AgentV and convoeval read
// what a grader prints and how it exits. Reads the grading context as JSON on stdin.
let raw = "";
for await (const chunk of process.stdin) raw += chunk;
const input = JSON.parse(raw);
const text = typeof input.output === "string" ? input.output : (input.output_text ?? "");
const mode = (input.config ?? {}).mode;
const say = (value) => process.stdout.write(typeof value === "string" ? value : JSON.stringify(value));
switch (mode) {
  case "score":
    say({ score: 0.6, assertions: [{ text: "partly", passed: true }] });
    break;
  case "assertions-only":
    say({ assertions: [{ text: "a", passed: true }, { text: "b", passed: false }, { text: "c", passed: true }] });
    break;
  case "plain-text":
    say("looks fine");
    break;
  case "exit-plain":
    say("not good");
    process.exitCode = 1;
    break;
  case "exit-stderr":
    process.stderr.write("crashed\n");
    process.exitCode = 2;
    break;
  case "exit-json":
    say({ score: 1 });
    process.exitCode = 1;
    break;
  case "over-one":
    say({ score: 1.7 });
    break;
  case "score-wins":
    say({ score: 0.9, assertions: [{ text: "x", passed: false }] });
    break;
  case "array":
    say([1, 2]);
    break;
  case "empty-object":
    say({});
    break;
  case "reads-reply":
    say({ score: text.includes("Paris") ? 1 : 0, assertions: [{ text: "names Paris", passed: text.includes("Paris") }] });
    break;
  default:
    say({ score: 0, assertions: [{ text: `unknown mode ${mode}`, passed: false }] });
}
