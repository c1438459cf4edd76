-- wrk script: overwrites random keys among the KEYS loaded by conclave-load.lua (VALUE_SIZE bytes), or reads them (READ=1).
local size = tonumber(os.getenv("VALUE_SIZE") or "1024")
local keys = tonumber(os.getenv("KEYS") or "10000")
local threads = tonumber(os.getenv("THREADS") or "2")
local read = os.getenv("READ") == "1"
local value = string.rep("u", size)
local share = math.ceil(keys / threads)

request = function()
  local path = "/v1/kv/load/" .. math.random(0, threads - 1) .. "/" .. math.random(0, share - 1)
  if read then
    return wrk.format("GET", path .. "?stale")
  end
  return wrk.format("PUT", path, nil, value)
end
