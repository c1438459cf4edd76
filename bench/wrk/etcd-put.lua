-- wrk script: etcd v3 writes through its JSON gateway (POST /v3/kv/put, key and value base64).
-- Same keys and value size as conclave-put.lua.
local size = tonumber(os.getenv("VALUE_SIZE") or "100")
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

local value = base64(string.rep("v", size))
local keys = {}
for i = 0, 9999 do keys[i] = base64("bench/" .. string.format("%05d", i)) end
local counter = 0

function setup(thread)
  thread:set("offset", math.random(0, 9999))
end

request = function()
  counter = counter + 1
  local body = '{"key":"' .. keys[(counter + (offset or 0)) % 10000] .. '","value":"' .. value .. '"}'
  return wrk.format("POST", "/v3/kv/put", { ["Content-Type"] = "application/json" }, body)
end
