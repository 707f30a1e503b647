#!/usr/bin/env bash
# Regenerates each role's README.md from its meta/argument_specs.yml with aar-doc
# (pinned in requirements-dev.txt) and scripts/role_docs.md.j2, so every role variable is
# described once, in its argument spec; and the failure catalogue of
# docs/verdict-and-failures.md from the signature table, with the table's recall on the corpus of
# real failure logs (scripts/failure_catalogue.py).
# --check writes nothing: it exits 1 and names every page that differs from its source.
# Usage: scripts/role_docs.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
AAR_DOC=${AAR_DOC:-$ROOT/.venv/bin/aar-doc}
check=false
[ "${1:-}" = --check ] && check=true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stale=()
for role in roles/*/; do
  role=${role%/}
  [ -f "$role/meta/argument_specs.yml" ] || continue
  out="$tmp/$(basename "$role").md"
  # aar-doc reads .aar_doc.yml from the working directory: run it where there is none
  (cd "$tmp" && "$AAR_DOC" --output-file "$out" --output-mode replace \
    --output-template "$ROOT/scripts/role_docs.md.j2" "$ROOT/$role" markdown) >/dev/null
  # aar-doc leaves P(name#type) plugin references as they are; the backticks are Markdown
  # shellcheck disable=SC2016
  sed -i -E 's/P\(([^)#]+)#[a-z]+\)/`\1`/g' "$out"
  cat -s "$out" >"$out.squeezed" && mv "$out.squeezed" "$out"  # one blank line between blocks
  if ! cmp -s "$out" "$role/README.md"; then
    if $check; then stale+=("$role/README.md"); else cp "$out" "$role/README.md"; echo "wrote $role/README.md"; fi
  fi
done
if $check; then
  python3 scripts/failure_catalogue.py --check 2>/dev/null || stale+=(docs/verdict-and-failures.md)
else
  python3 scripts/failure_catalogue.py
fi
if [ ${#stale[@]} -gt 0 ]; then
  printf 'stale (run scripts/role_docs.sh): %s\n' "${stale[@]}" >&2
  exit 1
fi
$check && echo "role READMEs, the failure catalogue and its recall match their sources"
exit 0
