import Foundation

/// A name no other test uses, `base-XXXXXXXX` (eight lowercase hex digits of a new UUID): for
/// client ids, topic prefixes and gateway ids, so every test owns its own.
public func unique(_ base: String) -> String {
    "\(base)-\(UUID().uuidString.prefix(8).lowercased())"
}
