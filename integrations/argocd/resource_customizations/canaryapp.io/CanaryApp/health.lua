-- Argo CD health of a canaryapp.io CanaryApp, from the status the controller writes.
--   Healthy                                   -> Healthy
--   Initializing, Progressing, Promoting,
--   RollingBack, or a status older than spec  -> Progressing
--   Paused, or waiting for a manual promotion
--   or for a batch's approval                 -> Suspended
--   Failed (spec.image failed), Invalid,
--   a child rejected by the API server        -> Degraded
-- The message is the controller's status.message (or the condition's, for a rejected child).
local hs = {}

local function condition(status, type)
  if status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local status = obj.status
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to report a status"
  return hs
end

local generation = obj.metadata.generation or 0
if status.observedGeneration == nil or status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
  return hs
end

local message = status.message or ""

local rejected = condition(status, "ChildrenApplied")
if rejected ~= nil and rejected.status == "False" then
  hs.status = "Degraded"
  hs.message = "A child was rejected: " .. (rejected.message or "")
  return hs
end

local phase = status.phase
if phase == "Failed" or phase == "Invalid" then
  hs.status = "Degraded"
  hs.message = message
  return hs
end

if phase == "Paused" then
  hs.status = "Suspended"
  hs.message = message
  return hs
end

if status.canary ~= nil and (status.canary.stage == "AwaitingPromotion" or status.canary.approval ~= nil) then
  hs.status = "Suspended"
  hs.message = message
  return hs
end

if phase == "Healthy" then
  hs.status = "Healthy"
  hs.message = message
  return hs
end

-- Initializing, Progressing, Promoting, RollingBack, and any phase a newer controller adds.
hs.status = "Progressing"
hs.message = message
return hs
