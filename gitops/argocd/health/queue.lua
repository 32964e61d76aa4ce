-- Queue: Healthy once the scheduler reports it Ready for the current generation.
hs = {status = "Progressing", message = "waiting for the scheduler to report the queue"}
if obj.status == nil then return hs end
if (obj.status.observedGeneration or 0) < (obj.metadata.generation or 0) then
  hs.message = "the scheduler has not seen the latest spec yet"
  return hs
end
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Ready" then
    if c.status == "True" then
      hs.status = "Healthy"
    elseif c.status == "False" then
      hs.status = "Degraded"
    end
    hs.message = c.message or ""
  end
end
return hs
