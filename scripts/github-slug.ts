/** GitHub's heading slugs, shared by the docs site's config and its link checker. */

/** GitHub's heading slug, so one `#anchor` works on GitHub and on the site alike. */
export function githubSlug(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, "")
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}
