-- Tests spec.image again although it failed: kubectl annotate canaryapp NAME canaryapp.io/retry=IMAGE --overwrite
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
obj.metadata.annotations["canaryapp.io/retry"] = obj.spec.image
return obj
