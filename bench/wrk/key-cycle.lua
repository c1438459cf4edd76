-- Shared by the read scripts (conclave-get.lua, etcd-range.lua): the requests for the KEYS keys load/<thread>/<n> that
-- the load scripts wrote (same KEYS and THREADS), built once per wrk thread by build(key), so that the load tool spends
-- its core on sending, not on Lua; each connection cycles over them from a random offset. Defines wrk's init and
-- request; returns nothing.
return function(build)
  local keys = tonumber(os.getenv("KEYS") or "10000")
  local threads = tonumber(os.getenv("THREADS") or "2")
  local share = math.ceil(keys / threads)
  local requests = {}
  local total = 0
  local counter = 0

  function init(args)
    for t = 0, threads - 1 do
      for n = 0, share - 1 do
        total = total + 1
        requests[total] = build("load/" .. t .. "/" .. n)
      end
    end
    counter = math.random(0, total - 1)
  end

  function request()
    counter = counter + 1
    return requests[counter % total + 1]
  end
end
