#!/usr/bin/env bash
# Creates target/agent-clients: the unmodified agent CLIs (Claude Code, Codex CLI, opencode) from
# npm, at the versions pinned by scripts/agent-clients/package-lock.json, for the proxy's
# real-client tests (crates/compactor-cli/tests/real_clients.rs). Install scripts are not
# run (npm 11 refuses them by default, and Claude Code's only links its native binary),
# so the script links each client's native entry point itself:
#   $DIR/bin/claude  Claude Code's platform binary (@anthropic-ai/claude-code-<platform>)
#   $DIR/bin/codex   Codex CLI's launcher (node @openai/codex/bin/codex.js)
#   $DIR/bin/opencode  opencode's platform binary (opencode-<platform>)
# Idempotent: an install made from the same lock file is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=scripts/agent-clients
DIR="${COMPACTOR_AGENT_CLIENTS:-target/agent-clients}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
STAMP="$DIR/.lock-sha256"
want="$(sha256sum "$SRC/package-lock.json" | cut -d' ' -f1)"

if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ] || [ ! -x "$DIR/bin/claude" ] || [ ! -x "$DIR/bin/codex" ] || [ ! -x "$DIR/bin/opencode" ]; then
    cp "$SRC/package.json" "$SRC/package-lock.json" "$DIR/"
    # `npm ci` refuses a lock that lacks an optional package; a registry (or a mirror)
    # that does not serve another platform's binaries of opencode leaves them out of the
    # lock. `npm install` then installs the same pinned versions from the same lock.
    (cd "$DIR" && { npm ci --ignore-scripts --no-audit --no-fund --loglevel=silent ||
        npm install --ignore-scripts --no-audit --no-fund --loglevel=error; })
    mkdir -p "$DIR/bin"
    claude=""
    for candidate in "$DIR"/node_modules/@anthropic-ai/claude-code-*/claude; do
        if [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
            claude="$candidate"
            break
        fi
    done
    if [ -z "$claude" ]; then
        echo "agent-clients: no Claude Code binary for this platform under $DIR/node_modules/@anthropic-ai" >&2
        exit 1
    fi
    opencode=""
    for candidate in "$DIR"/node_modules/opencode-*/bin/opencode; do
        if [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
            opencode="$candidate"
            break
        fi
    done
    if [ -z "$opencode" ]; then
        echo "agent-clients: no opencode binary for this platform under $DIR/node_modules" >&2
        exit 1
    fi
    # Relative, so that the directory can be moved or copied whole.
    ln -sfn "../${claude#"$DIR"/}" "$DIR/bin/claude"
    ln -sfn "../${opencode#"$DIR"/}" "$DIR/bin/opencode"
    cat > "$DIR/bin/codex" <<'WRAPPER'
#!/usr/bin/env bash
exec node "$(dirname "$(readlink -f "$0")")/../node_modules/@openai/codex/bin/codex.js" "$@"
WRAPPER
    chmod +x "$DIR/bin/codex"
    echo "$want" > "$STAMP"
fi
echo "agent-clients: $DIR/bin/claude: $("$DIR/bin/claude" --version)"
echo "agent-clients: $DIR/bin/codex: $("$DIR/bin/codex" --version)"
echo "agent-clients: $DIR/bin/opencode: opencode $("$DIR/bin/opencode" --version)"
