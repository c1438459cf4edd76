-- wrk script: etcd v3 reads through its JSON gateway (POST /v3/kv/range, the key base64) of the KEYS keys
-- load/<thread>/<n> that etcd-load.lua wrote (same KEYS and THREADS). SERIALIZABLE=1 reads the member's own state
-- ("serializable": true, as Conclave's ?stale); otherwise etcd's default, a linearizable read (a ReadIndex round with
-- the leader). Each connection cycles over the keys from a random offset; the requests are built once per wrk thread.
local keys = tonumber(os.getenv("KEYS") or "10000")
local threads = tonumber(os.getenv("THREADS") or "2")
local serializable = os.getenv("SERIALIZABLE") == "1" and ',"serializable":true' or ""
local share = math.ceil(keys / threads)
local base64 = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "etcd-base64.lua")
local requests = {}
local total = 0
local counter = 0

function init(args)
  for t = 0, threads - 1 do
    for n = 0, share - 1 do
      total = total + 1
      requests[total] = wrk.format("POST", "/v3/kv/range", { ["Content-Type"] = "application/json" },
        '{"key":"' .. base64("load/" .. t .. "/" .. n) .. '"' .. serializable .. '}')
    end
  end
  counter = math.random(0, total - 1)
end

request = function()
  counter = counter + 1
  return requests[counter % total + 1]
end
