// A server's free texts (a rule's or an API key's description and metadata) before they go into the
// state or a message (issue 39): a server, or a gateway that sees the Authorization header, may put the
// caller's key into them in pieces that no pattern of a whole encoding finds. One that carries credential
// material (scrub finds a run, or render-msg.ts carriesKeyMaterial) is replaced by a fixed placeholder,
// in the outputs and in every message; the read that found it says so in one line (messages.ts).
import { credentialWindows } from "./http/failures";
import { scrub } from "./http/redact";
import { carriesKeyMaterial, KeyMaterial } from "./http/render-msg";
import { report } from "./engine";
import { withheldTextsWords } from "./messages";

/** What stands in the state and the messages for a server's text that carried credential material. */
export const WITHHELD_TEXT = "(withheld by the provider: it held credential material)";

type Texts = { description?: string | null; metadata?: string | null };
const TEXT_FIELDS = ["description", "metadata"] as const;

/** Which of `body`'s texts carry credential material (pure: the material is given). */
export function textsToWithhold(body: Texts, material: KeyMaterial, scrubbed: (t: string) => string): string[] {
  return TEXT_FIELDS.filter((f) => {
    const t = body[f];
    if (typeof t !== "string" || t === "") return false;
    return scrubbed(t) !== t || carriesKeyMaterial(t, material, f === "description");
  });
}

/** `body` with each of its texts that carries credential material as WITHHELD_TEXT, and which those were. */
export function withheldTexts<T extends Texts>(body: T): { body: T; fields: string[] } {
  if (!body.description && !body.metadata) return { body, fields: [] };
  const fields = textsToWithhold(body, credentialWindows(), scrub);
  if (!fields.length) return { body, fields };
  const out = { ...body };
  for (const f of fields) (out as Texts)[f as (typeof TEXT_FIELDS)[number]] = WITHHELD_TEXT;
  return { body: out, fields };
}

/** The one line a read says when it withheld texts (`found`: "description of ipr_…"); nothing when none. */
export function sayWithheld(urn: string | undefined, what: string, found: string[]): void {
  if (found.length) report(urn, withheldTextsWords(what, found, WITHHELD_TEXT), { warning: true });
}
