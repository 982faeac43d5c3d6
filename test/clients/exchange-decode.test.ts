/**
 * Exchange.read decodes the body piece by piece as one TextDecoder over the whole body would,
 * wherever the reads split a multi-byte character and whatever bytes (BOM, invalid sequences) the
 * body holds. Any faster decoding of the pieces has to keep passing these.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Exchange, IdleDeadline } from "../../src/clients/http.ts";

const URL = "http://127.0.0.1:1/test";

/** An exchange whose body arrives as exactly these byte pieces. */
function exchangeOf(pieces: Uint8Array[]): Exchange {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(piece);
      controller.close();
    },
  });
  const options = { method: "GET" as const, url: URL, timeoutMs: 10_000 };
  return new Exchange(new Response(body), new IdleDeadline(options.timeoutMs, URL), options, () => {});
}

async function readAll(exchange: Exchange): Promise<string[]> {
  const texts: string[] = [];
  for (let text = await exchange.read(); text !== null; text = await exchange.read()) texts.push(text);
  return texts;
}

/** `bytes` cut at the given offsets. */
function cut(bytes: Uint8Array, offsets: number[]): Uint8Array[] {
  const points = [...new Set(offsets.map((offset) => offset % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    pieces.push(bytes.subarray(start, point));
    start = point;
  }
  return pieces;
}

const encode = (text: string) => new TextEncoder().encode(text);

describe("Exchange.read", () => {
  it("joins a character split between two reads", async () => {
    const bytes = encode('data: {"content":"café €"}\n\n');
    const split = bytes.indexOf(0xc3) + 1;
    const texts = await readAll(exchangeOf([bytes.subarray(0, split), bytes.subarray(split)]));
    expect(texts.join("")).toBe('data: {"content":"café €"}\n\n');
    expect(texts.every((text) => !text.includes("\ufffd"))).toBe(true);
  });

  it("drops a leading BOM and keeps one inside the body, like one decoder over the whole body", async () => {
    const bytes = encode("\ufeffdata: a\n\n\ufeffdata: b\n\n");
    const texts = await readAll(exchangeOf(cut(bytes, [3, 14])));
    expect(texts.join("")).toBe("data: a\n\n\ufeffdata: b\n\n");
  });

  it("ends a body cut inside a character with U+FFFD", async () => {
    const bytes = encode("data: é");
    const texts = await readAll(exchangeOf([bytes.subarray(0, bytes.length - 1)]));
    expect(texts.join("")).toBe("data: \ufffd");
  });

  it("reads any bytes, cut anywhere, as one TextDecoder over the whole body does", async () => {
    const text = fc.string({ unit: "binary", maxLength: 40 }).map(encode);
    const bytes = fc.oneof(text, fc.uint8Array({ maxLength: 40 }));
    await fc.assert(
      fc.asyncProperty(bytes, fc.array(fc.nat(), { maxLength: 6 }), async (body, offsets) => {
        const texts = await readAll(exchangeOf(cut(body, offsets)));
        expect(texts.join("")).toBe(new TextDecoder().decode(body));
      }),
      { numRuns: 300 },
    );
  });
});
