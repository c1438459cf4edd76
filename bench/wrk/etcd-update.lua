-- wrk script: overwrites random keys among the KEYS loaded by etcd-load.lua (VALUE_SIZE bytes), or reads them (READ=1,
-- serializable reads: a member's own state, as Conclave's ?stale).
local size = tonumber(os.getenv("VALUE_SIZE") or "1024")
local keys = tonumber(os.getenv("KEYS") or "10000")
local threads = tonumber(os.getenv("THREADS") or "2")
local read = os.getenv("READ") == "1"
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function base64(data)
  return ((data:gsub(".", function(x)
    local bits, byte = "", x:byte()
    for i = 8, 1, -1 do bits = bits .. (byte % 2 ^ i - byte % 2 ^ (i - 1) > 0 and "1" or "0") end
    return bits
  end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(x)
    if #x < 6 then return "" end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == "1" and 2 ^ (6 - i) or 0) end
    return alphabet:sub(c + 1, c + 1)
  end) .. ({ "", "==", "=" })[#data % 3 + 1])
end
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
