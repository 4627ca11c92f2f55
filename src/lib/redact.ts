/**
 * RPC URLs often carry an API key in their path or query (`https://eth.example.com/v2/<key>`).
 * They are shown, logged and returned only as their origin: scheme, host and port.
 */

/** `https://user:pw@eth.example.com:8443/v2/KEY?x=1` → `https://eth.example.com:8443`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '[invalid url]';
  }
}

const URL_IN_TEXT = /\b(?:https?|wss?):\/\/[^\s"'<>()]+/gi;

/** Every URL inside a text (an error message, a stack) reduced to its origin. */
export function redactUrls(text: string): string {
  return text.replace(URL_IN_TEXT, (u) => redactUrl(u.replace(/[.,;:]+$/, '')));
}
