-- wrk script: loads KEYS distinct keys load/<thread>/<n> of VALUE_SIZE bytes into etcd (v3 JSON gateway), once.
local size = tonumber(os.getenv("VALUE_SIZE") or "1024")
local keys = tonumber(os.getenv("KEYS") or "10000")
local threads = tonumber(os.getenv("THREADS") or "2")
local base64 = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "etcd-base64.lua")
local value = base64(string.rep("v", size))
local counter = 0
id = 0 -- a global: setup() gives each thread its own (a local here would hide it, and both threads would write the same keys)
local nextId = 0

function setup(thread)
  thread:set("id", nextId)
  nextId = nextId + 1
end

request = function()
  local n = counter
  counter = counter + 1
  if n >= math.ceil(keys / threads) then
    return wrk.format("POST", "/v3/maintenance/status", { ["Content-Type"] = "application/json" }, "{}")
  end
  local body = '{"key":"' .. base64("load/" .. id .. "/" .. n) .. '","value":"' .. value .. '"}'
  return wrk.format("POST", "/v3/kv/put", { ["Content-Type"] = "application/json" }, body)
end

response = function(status, headers, body)
  if counter > math.ceil(keys / threads) + 64 then wrk.thread:stop() end
end
