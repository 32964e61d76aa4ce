-- AdmissionPolicy: Healthy once it compiled and its tests passed for the current
-- generation; Degraded with the compiler's messages when not (the last good version of
-- the policy keeps serving meanwhile).
hs = {status = "Progressing", message = "waiting for the webhook to compile the policy"}
if obj.status == nil then return hs end
if (obj.status.observedGeneration or 0) < (obj.metadata.generation or 0) then
  hs.message = "the webhook has not compiled the latest spec yet"
  return hs
end
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Ready" then
    if c.status == "True" then
      hs.status = "Healthy"
      hs.message = c.message or "compiled"
    elseif c.status == "False" then
      hs.status = "Degraded"
      hs.message = table.concat(obj.status.errors or {c.message or "does not compile"}, "; ")
    end
  end
end
return hs
