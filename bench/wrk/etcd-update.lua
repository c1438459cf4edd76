-- wrk script: overwrites random keys among the KEYS loaded by etcd-load.lua (VALUE_SIZE bytes), or reads them (READ=1,
-- serializable reads: a member's own state, as Conclave's ?stale).
local size = tonumber(os.getenv("VALUE_SIZE") or "1024")
local keys = tonumber(os.getenv("KEYS") or "10000")
local threads = tonumber(os.getenv("THREADS") or "2")
local read = os.getenv("READ") == "1"
local base64 = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "etcd-base64.lua")
local value = base64(string.rep("u", size))
local share = math.ceil(keys / threads)

request = function()
  local key = base64("load/" .. math.random(0, threads - 1) .. "/" .. math.random(0, share - 1))
  if read then
    return wrk.format("POST", "/v3/kv/range", { ["Content-Type"] = "application/json" },
      '{"key":"' .. key .. '","serializable":true}')
  end
  return wrk.format("POST", "/v3/kv/put", { ["Content-Type"] = "application/json" },
    '{"key":"' .. key .. '","value":"' .. value .. '"}')
end
