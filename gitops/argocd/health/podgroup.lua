-- PodGroup: Healthy while the gang runs or after it completed, Degraded when it failed,
-- Progressing while it waits (the message says why, as the scheduler wrote it).
hs = {status = "Progressing", message = "waiting for the scheduler"}
if obj.status == nil then return hs end
local phase = obj.status.phase or "Pending"
if phase == "Running" or phase == "Completed" then
  hs.status = "Healthy"
elseif phase == "Failed" then
  hs.status = "Degraded"
end
hs.message = phase
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Scheduled" and c.message ~= nil then
    hs.message = phase .. ": " .. c.message
  end
end
return hs
