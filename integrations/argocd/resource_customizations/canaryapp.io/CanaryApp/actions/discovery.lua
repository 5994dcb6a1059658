-- The actions Argo CD offers on a CanaryApp. Each sets one annotation, exactly as the README's
-- `kubectl annotate` one-liners do, so that no spec field changes and Argo CD sees no drift.
local actions = {}

local annotations = obj.metadata.annotations or {}
local status = obj.status or {}
local canary = status.canary
-- A test that can still be promoted, aborted or paused: not yet promoting or rolling back.
local testing = canary ~= nil
  and (canary.stage == "WaitingForSecondary" or canary.stage == "Stepping" or canary.stage == "AwaitingPromotion")
local paused = annotations["canaryapp.io/paused"] ~= nil

local specImageFailed = false
if status.failedImages ~= nil then
  for _, failed in ipairs(status.failedImages) do
    if failed.image == obj.spec.image then
      specImageFailed = true
    end
  end
end

actions["promote"] = { ["disabled"] = not testing }
actions["abort"] = { ["disabled"] = not testing }
actions["retry"] = { ["disabled"] = not specImageFailed }
actions["pause"] = { ["disabled"] = paused or not testing }
actions["resume"] = { ["disabled"] = not paused }
-- A batch release whose batch passed its analysis and waits for a person before the next one.
actions["approve"] = { ["disabled"] = not (testing and canary.approval ~= nil) }
return actions
