-- aborts the test: all traffic returns to the primary and the image is recorded as failed: kubectl annotate canaryapp NAME canaryapp.io/abort=now --overwrite
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
obj.metadata.annotations["canaryapp.io/abort"] = "now"
return obj
