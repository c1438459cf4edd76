-- wrk script: Consul-style KV reads from Conclave (GET /v1/kv/<key>) of the keys conclave-load.lua wrote (key-cycle.lua
-- says which, and how they are cycled over). STALE=1 reads the server's own state (?stale); otherwise the default
-- consistency (a ReadIndex round with the leader).
local suffix = os.getenv("STALE") == "1" and "?stale" or ""
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or ""
dofile(here .. "key-cycle.lua")(function(key)
  return wrk.format("GET", "/v1/kv/" .. key .. suffix)
end)
