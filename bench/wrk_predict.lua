-- bench/wrk_predict.lua — wrk request generator: POST /predict with held-out
-- texts, one JSON body per line of the file given after `--`.
local bodies = {}
local idx = 0
function init(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  idx = math.random(#bodies)
end
function request()
  idx = idx % #bodies + 1
  return wrk.format("POST", "/predict", { ["Content-Type"] = "application/json" }, bodies[idx])
end
