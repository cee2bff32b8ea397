-- Argo CD health of jmsbridge.dev JmsBridge and JmsBridgeRoute, from their kstatus conditions.
local hs = {}
if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator"
  return hs
end
if obj.metadata ~= nil and obj.metadata.generation ~= nil and obj.status.observedGeneration ~= nil
    and obj.status.observedGeneration < obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to see the latest spec"
  return hs
end
local ready, stalled, reconciling
for _, condition in ipairs(obj.status.conditions) do
  if condition.type == "Ready" then ready = condition end
  if condition.type == "Stalled" and condition.status == "True" then stalled = condition end
  if condition.type == "Reconciling" and condition.status == "True" then reconciling = condition end
end
if stalled ~= nil then
  hs.status = "Degraded"
  hs.message = (stalled.reason or "") .. ": " .. (stalled.message or "")
  return hs
end
-- A change still rolling out (Reconciling) is Progressing even while the old spec runs (Ready), as kstatus
-- says InProgress: a sync waits for the rollout to end.
if ready ~= nil and ready.status == "True" and reconciling == nil then
  hs.status = "Healthy"
  hs.message = ready.message or ""
  return hs
end
if ready ~= nil and ready.reason == "Suspended" then
  hs.status = "Suspended"
  hs.message = ready.message or ""
  return hs
end
hs.status = "Progressing"
if reconciling ~= nil then
  hs.message = reconciling.message or ""
elseif ready ~= nil then
  hs.message = ready.message or ""
end
return hs
