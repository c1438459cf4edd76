-- wrk script: Consul-style KV writes to Conclave (PUT /v1/kv/<key>, the value as the body).
-- Keys cycle over 10,000 names; the value is VALUE_SIZE bytes (default 100).
local size = tonumber(os.getenv("VALUE_SIZE") or "100")
local value = string.rep("v", size)
local counter = 0

function setup(thread)
  thread:set("offset", math.random(0, 9999))
end

request = function()
  counter = counter + 1
  local key = "bench/" .. string.format("%05d", (counter + (offset or 0)) % 10000)
  return wrk.format("PUT", "/v1/kv/" .. key, nil, value)
end
