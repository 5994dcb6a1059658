-- starts the next batch of a batch release waiting for approval: kubectl annotate canaryapp NAME canaryapp.io/approve=now --overwrite
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
obj.metadata.annotations["canaryapp.io/approve"] = "now"
return obj
