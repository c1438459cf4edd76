-- wrk script: etcd v3 reads through its JSON gateway (POST /v3/kv/range, the key base64) of the keys etcd-load.lua
-- wrote (key-cycle.lua says which, and how they are cycled over). SERIALIZABLE=1 reads the member's own state
-- ("serializable": true, as Conclave's ?stale); otherwise etcd's default, a linearizable read (a ReadIndex round with
-- the leader).
local serializable = os.getenv("SERIALIZABLE") == "1" and ',"serializable":true' or ""
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or ""
local base64 = dofile(here .. "etcd-base64.lua")
dofile(here .. "key-cycle.lua")(function(key)
  return wrk.format("POST", "/v3/kv/range", { ["Content-Type"] = "application/json" },
    '{"key":"' .. base64(key) .. '"' .. serializable .. '}')
end)
