#!/usr/bin/env bun
/**
 * BLEU script grader
 *
 * Computes a BLEU-like score between candidate and reference text.
 * BLEU (Bilingual Evaluation Understudy) measures n-gram precision with a
 * brevity penalty, commonly used for translation evaluation.
 */
import { defineScriptGrader } from '@agentv/sdk';

function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^\w\s]/g, '')
    .split(/\s+/)
    .filter(Boolean);
}

function ngramCounts(tokens: string[], n: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i <= tokens.length - n; i++) {
    const gram = tokens.slice(i, i + n).join(' ');
    counts.set(gram, (counts.get(gram) ?? 0) + 1);
  }
  return counts;
}

function clippedPrecision(candidate: string[], reference: string[], n: number): number {
  const candGrams = ngramCounts(candidate, n);
  const refGrams = ngramCounts(reference, n);

  let clipped = 0;
  let total = 0;

  for (const [gram, count] of candGrams) {
    const refCount = refGrams.get(gram) ?? 0;
    clipped += Math.min(count, refCount);
    total += count;
  }

  return total === 0 ? 0 : clipped / total;
}

function bleuScore(candidate: string, reference: string, maxN = 4): number {
  const candTokens = tokenize(candidate);
  const refTokens = tokenize(reference);

  if (candTokens.length === 0) return 0;

  // Brevity penalty
  const bp =
    candTokens.length >= refTokens.length ? 1 : Math.exp(1 - refTokens.length / candTokens.length);

  const effectiveN = Math.min(maxN, candTokens.length);
  let logSum = 0;
  let count = 0;

  for (let n = 1; n <= effectiveN; n++) {
    const p = clippedPrecision(candTokens, refTokens, n);
    if (p === 0) return 0; // If any n-gram precision is 0, BLEU is 0
    logSum += Math.log(p);
    count++;
  }

  return bp * Math.exp(logSum / count);
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

  const score = bleuScore(outputText, reference);

  const passed = score >= 0.3;
  const assertions = [
    {
      text: passed ? `BLEU ${score.toFixed(3)} >= 0.3` : `BLEU ${score.toFixed(3)} < 0.3`,
      passed,
      evidence: `BLEU score: ${score.toFixed(3)}`,
    },
  ];

  return {
    score,
    assertions,
    details: { bleu: score },
  };
});
