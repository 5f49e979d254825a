#!/usr/bin/env bun
/**
 * ROUGE-N script grader
 *
 * Computes ROUGE-1 and ROUGE-2 F1 scores between candidate and reference text.
 * ROUGE (Recall-Oriented Understudy for Gisting Evaluation) measures n-gram
 * overlap, commonly used for summarisation evaluation.
 */
import { defineScriptGrader } from '@agentv/sdk';

function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^\w\s]/g, '')
    .split(/\s+/)
    .filter(Boolean);
}

function ngrams(tokens: string[], n: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i <= tokens.length - n; i++) {
    const gram = tokens.slice(i, i + n).join(' ');
    counts.set(gram, (counts.get(gram) ?? 0) + 1);
  }
  return counts;
}

function rougeN(candidate: string, reference: string, n: number) {
  const candTokens = tokenize(candidate);
  const refTokens = tokenize(reference);

  const candGrams = ngrams(candTokens, n);
  const refGrams = ngrams(refTokens, n);

  let overlap = 0;
  for (const [gram, count] of refGrams) {
    overlap += Math.min(count, candGrams.get(gram) ?? 0);
  }

  const totalRef = Array.from(refGrams.values()).reduce((a, b) => a + b, 0);
  const totalCand = Array.from(candGrams.values()).reduce((a, b) => a + b, 0);

  const recall = totalRef === 0 ? 0 : overlap / totalRef;
  const precision = totalCand === 0 ? 0 : overlap / totalCand;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);

  return { precision, recall, f1 };
}

function getMessageText(
  messages: readonly { role: string; content?: unknown }[],
  role = 'assistant',
): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const msg = messages[i];
    if (msg.role === role) {
      if (typeof msg.content === 'string') return msg.content;
      if (Array.isArray(msg.content)) {
        return msg.content
          .filter((b: { type?: string }) => b.type === 'text')
          .map((b: { text?: string }) => b.text)
          .join('\n');
      }
    }
  }
  return '';
}

export default defineScriptGrader(({ output, expectedOutput }) => {
  const outputText = getMessageText(output ?? []);
  const reference = getMessageText(expectedOutput);

  if (!reference) {
    return {
      score: 0,
      assertions: [{ text: 'No reference text provided', passed: false }],
    };
  }

  const rouge1 = rougeN(outputText, reference, 1);
  const rouge2 = rougeN(outputText, reference, 2);

  const score = rouge1.f1;

  const assertions: Array<{ text: string; passed: boolean }> = [];

  if (rouge1.f1 >= 0.5)
    assertions.push({ text: `ROUGE-1 F1 ${rouge1.f1.toFixed(3)} >= 0.5`, passed: true });
  else assertions.push({ text: `ROUGE-1 F1 ${rouge1.f1.toFixed(3)} < 0.5`, passed: false });

  if (rouge2.f1 >= 0.3)
    assertions.push({ text: `ROUGE-2 F1 ${rouge2.f1.toFixed(3)} >= 0.3`, passed: true });
  else assertions.push({ text: `ROUGE-2 F1 ${rouge2.f1.toFixed(3)} < 0.3`, passed: false });

  return {
    score,
    assertions,
    details: { rouge1, rouge2 },
  };
});
