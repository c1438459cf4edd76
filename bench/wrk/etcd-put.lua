-- wrk script: etcd v3 writes through its JSON gateway (POST /v3/kv/put, key and value base64).
-- Same keys and value size as conclave-put.lua.
local size = tonumber(os.getenv("VALUE_SIZE") or "100")

local base64 = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "etcd-base64.lua")

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
