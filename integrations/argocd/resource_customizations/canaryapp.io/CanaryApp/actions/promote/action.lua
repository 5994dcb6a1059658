-- promotes the image under test now: kubectl annotate canaryapp NAME canaryapp.io/promote=now --overwrite
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
obj.metadata.annotations["canaryapp.io/promote"] = "now"
return obj
