"""The suite's stdio test plugin (SCHCLI-PLUGINS-LAZY): a newline-delimited JSON-RPC MCP server that appends
"start" and then every method it receives to the marker file named by its argument. It serves one tool,
``echo`` (the name the expectations files' manifests declare), and lists it on tools/list: an implementation
may check a tool against the server's list when it executes it (81f67c8d does), which D2 §7 allows at
execution, not at startup. Run by the target, never imported by the suite."""
import json
import sys

marker = sys.argv[1]
def note(what):
    with open(marker, "a", encoding="utf-8") as fh:
        fh.write(what + "\n")
note("start")
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if not isinstance(msg, dict):
        continue
    note(str(msg.get("method")))
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "dws-contract-stdio-plugin", "version": "1"}}
    elif msg.get("method") == "tools/list":
        result = {"tools": [{"name": "echo", "description": "echo the arguments",
                             "inputSchema": {"type": "object"}}]}
    elif msg.get("method") == "tools/call":
        args = (msg.get("params") or {}).get("arguments")
        result = {"content": [{"type": "text", "text": json.dumps({"success": True, "echo": args})}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
