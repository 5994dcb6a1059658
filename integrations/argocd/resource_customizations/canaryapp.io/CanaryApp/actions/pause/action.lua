-- holds the test at its current step until resume: kubectl annotate canaryapp NAME canaryapp.io/paused=true --overwrite
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
obj.metadata.annotations["canaryapp.io/paused"] = "true"
return obj
