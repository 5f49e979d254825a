// A stand-in written for convoeval's tests, not AgentV's file of this name (which is not
// copied): AgentV checks that a prompt command's file exists, so this path must exist. The
// tests run it through a fake `bun`; with real Bun it prints a grading prompt built from the
// JSON context on stdin, as AgentV's executable prompt templates do.
const ctx = JSON.parse(await Bun.stdin.text());
const rubric = ctx.config?.rubric ? `\n## Rubric\n${ctx.config.rubric}` : "";
console.log(`## Question\n${ctx.question}\n\n## Candidate answer\n${ctx.output_text}${rubric}`);
