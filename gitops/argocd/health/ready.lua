-- Queue, AdmissionPolicy, ScaleDownPolicy: Healthy once their controller (scheduler,
-- webhook, autoscaler) reports them Ready for the current generation; Degraded when it
-- reports them not Ready, with its errors (an AdmissionPolicy that does not compile: the
-- last good version keeps serving meanwhile); Progressing until then.
hs = {status = "Progressing", message = "waiting for Tessera to report it"}
if obj.status == nil then return hs end
if (obj.status.observedGeneration or 0) < (obj.metadata.generation or 0) then
  hs.message = "Tessera has not seen the latest spec yet"
  return hs
end
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Ready" then
    if c.status == "True" then
      hs.status = "Healthy"
      hs.message = c.message or ""
    elseif c.status == "False" then
      hs.status = "Degraded"
      hs.message = table.concat(obj.status.errors or {c.message or "not ready"}, "; ")
    end
  end
end
return hs
