-- wrk script: Consul-style KV reads from Conclave (GET /v1/kv/<key>) of the KEYS keys load/<thread>/<n> that
-- conclave-load.lua wrote (same KEYS and THREADS). STALE=1 reads the server's own state (?stale); otherwise the
-- default consistency (a ReadIndex round with the leader). Each connection cycles over the keys from a random offset;
-- the requests are built once per wrk thread, so that the load tool spends its core on sending, not on Lua.
local keys = tonumber(os.getenv("KEYS") or "10000")
local threads = tonumber(os.getenv("THREADS") or "2")
local suffix = os.getenv("STALE") == "1" and "?stale" or ""
local share = math.ceil(keys / threads)
local requests = {}
local total = 0
local counter = 0

function init(args)
  for t = 0, threads - 1 do
    for n = 0, share - 1 do
      total = total + 1
      requests[total] = wrk.format("GET", "/v1/kv/load/" .. t .. "/" .. n .. suffix)
    end
  end
  counter = math.random(0, total - 1)
end

request = function()
  counter = counter + 1
  return requests[counter % total + 1]
end
