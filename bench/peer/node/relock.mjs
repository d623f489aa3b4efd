// Keeps download addresses out of package-lock.json. .npmrc already stops npm
// from writing "resolved" URLs (omit-lockfile-registry-resolved); npm still
// copies each package's "funding" link into the lock, so this drops those
// (npm ci never reads them) and then checks that no address is left.
// Package names here contain "http" (for example @smithy/node-http-handler),
// so the check looks for addresses ("scheme://"), not the word.
// Run through `npm run lock` after changing package.json.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("./package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
for (const entry of Object.values(lock.packages ?? {})) {
  delete entry.funding;
  if (typeof entry.resolved === "string" && /^[a-z+]+:/i.test(entry.resolved)) {
    throw new Error(`package-lock.json: resolved address ${entry.resolved}: set omit-lockfile-registry-resolved=true`);
  }
}
const text = JSON.stringify(lock, null, 2) + "\n";
if (/[a-z+]+:\/\//i.test(text)) {
  throw new Error("package-lock.json still holds an address");
}
writeFileSync(path, text);
