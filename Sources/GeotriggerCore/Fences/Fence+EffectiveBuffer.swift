extension Fence {
    /// The effective buffer in metres (docs/configuration.md "Trigger keys", **Effective buffer**): the feature's
    /// `properties.buffer`, else the trigger's `buffer`, else the layer's `geotrigger.buffer`, else 0.
    public func effectiveBuffer(triggerBuffer: Double?, layerBuffer: Double?) -> Double {
        buffer ?? triggerBuffer ?? layerBuffer ?? 0
    }
}

extension FenceLayer {
    /// The layer's default buffer: `geotrigger.buffer`, when it is a number (its type is
    /// checked where trigger keys are validated).
    public var defaultBuffer: Double? {
        defaults?["buffer"]?.numberValue
    }

    /// The effective buffer of `fence` (a fence of this layer) in a trigger whose `buffer` is `triggerBuffer`.
    public func effectiveBuffer(of fence: Fence, triggerBuffer: Double?) -> Double {
        fence.effectiveBuffer(triggerBuffer: triggerBuffer, layerBuffer: defaultBuffer)
    }

    /// One error per Point or Line fence whose effective buffer is 0 in the trigger named
    /// `trigger` (whose own `buffer` is `triggerBuffer`, nil when it sets none).
    public func zeroBufferErrors(trigger: String, triggerBuffer: Double?) -> [FenceError] {
        fences.compactMap { fence in
            guard fence.geometry.needsBuffer, !(effectiveBuffer(of: fence, triggerBuffer: triggerBuffer) > 0) else {
                return nil
            }
            return FenceError(
                file: file, fence: fence,
                message: "\(fence.geometry.kindName) needs a buffer > 0 in trigger \"\(trigger)\""
                    + " (set properties.buffer, the trigger's buffer or the layer's geotrigger.buffer)")
        }
    }

    /// The zero-buffer errors of the trigger used when there is no config: one per layer,
    /// named after it, with the layer's defaults.
    public func defaultTriggerErrors() -> [FenceError] {
        zeroBufferErrors(trigger: name, triggerBuffer: nil)
    }
}
