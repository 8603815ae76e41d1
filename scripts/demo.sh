#!/usr/bin/env bash
# Command one: set up everything on a fresh Debian 12 machine and run a real
# codemode session that discovers servers and calls tools on two of them.
# Takes --python-source TARBALL on hosts without Debian's archive.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_setup_args "$@"
setup_all

log "running a session: discover servers, call everything.echo and time.get_current_time"
cd "$ROOT"
"$BIN/codemode" run --servers everything,time - <<'PY'
import asyncio
print("servers:", [s["name"] for s in runtime.discovered_servers(detailed=True)])
print("tools matching 'time':", [d["tool"] for d in runtime.search_tool_docs_sync("time")])
echo, now = await asyncio.gather(
    mcp_everything.echo(message="hello from the sandbox"),
    mcp_time.get_current_time(timezone="UTC"),
)
print("echo ->", echo)
print("time ->", now)
PY
