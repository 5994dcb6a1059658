-- Continues a paused test: kubectl annotate canaryapp NAME canaryapp.io/paused-
if obj.metadata.annotations ~= nil then
  obj.metadata.annotations["canaryapp.io/paused"] = nil
end
return obj
