import Foundation
import Testing
import TestSupport
@testable import Gateway

/// docs/architecture.md "Start and shutdown" lists the services in the order the code declares
/// (``ServiceRole``): the start order (the indented line) and the numbered shutdown list (its
/// bold names), which is its reverse.
@Suite struct ServiceOrderTests {
    static let declared = ServiceRole.allCases.map(\.serviceName)

    /// The lines of the section "Start and shutdown".
    static func section() throws -> [Substring] {
        let text = try String(contentsOfFile: repositoryRoot + "/docs/architecture.md", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "## Start and shutdown"))
        let end = lines[(start + 1)...].firstIndex { $0.hasPrefix("## ") } ?? lines.endIndex
        return Array(lines[(start + 1)..<end])
    }

    /// The names of the indented start order: comma-separated, remarks in parentheses dropped.
    static func startOrder(_ section: [Substring]) -> [String] {
        let indented = section.drop { !$0.hasPrefix("    ") }.prefix { $0.hasPrefix("    ") }
        return indented.joined(separator: " ").split(separator: ",").map { entry in
            var name = String(entry)
            while let open = name.firstIndex(of: "("), let close = name[open...].firstIndex(of: ")") {
                name.removeSubrange(open...close)
            }
            return name.trimmingCharacters(in: .whitespaces)
        }
    }

    /// The bold names of the numbered shutdown list (an item goes on over its indented lines).
    static func shutdownOrder(_ section: [Substring]) -> [String] {
        var items: [String] = []
        for line in section {
            if line.first?.isNumber == true, line.contains(". ") {
                items.append(String(line))
            } else if !items.isEmpty, line.hasPrefix("   ") {
                items[items.count - 1] += " " + line
            } else if !items.isEmpty, !line.isEmpty {
                break
            }
        }
        return items.flatMap { item in
            item.components(separatedBy: "**").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        }
    }

    @Test func theDocumentedStartOrderIsTheDeclaredOne() throws {
        #expect(Self.startOrder(try Self.section()) == Self.declared)
    }

    @Test func theDocumentedShutdownListIsTheDeclaredOrderReversed() throws {
        #expect(Self.shutdownOrder(try Self.section()) == Array(Self.declared.reversed()))
    }

    @Test func aServiceListHandsItsServicesOverInTheDeclaredOrder() {
        struct Named: Service {
            let name: String
            func run() async throws {}
            func shutdown() async {}
        }
        var list = ServiceList()
        for role in ServiceRole.allCases.reversed() {
            list.add(role, Named(name: role == .gpsdFeeds ? "gpsd-car" : role.serviceName))
        }
        list.add(.gpsdFeeds, Named(name: "gpsd-boat"))
        #expect(list.inStartOrder.map(\.name) == Self.declared.dropLast() + ["gpsd-car", "gpsd-boat"])
    }
}
