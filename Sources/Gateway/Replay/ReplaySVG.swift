import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// Draws a replay as SVG: every fence near the track with its buffer, the track of each
/// device, each enter / exit / dwell where it was decided, labelled, and a scale bar, so an
/// operator sees why a fence flapped and what hysteresis changes.
///
/// Structure (relied on by tests): one `<path class="fence">` per fence, one
/// `<polyline class="track">` per device whose points are its updates in order, one
/// `<text class="event">` per event starting with its type, and one dashed
/// `<line class="inferred">` per stay inferred between sparse fixes (`crossings`), from its
/// inferred enter to its inferred exit (the part of the track the device is taken to have
/// spent inside). A trip's route is one `<polyline class="route" data-trip="ID">` over a wide
/// translucent one of its corridor, and its events are `<text class="event">` like the others.
struct ReplaySVG {
    let width = 1000.0
    /// Context around the track: a quarter of its extent, at least 25 m.
    var minimumMargin = 25.0

    func render(
        updates: [LocationUpdate], decisions: [ReplayRun.Decision], snapshot: EngineSnapshot, trips: [TripRun] = [],
        tripDecisions: [ReplayRun.TripDecision] = []
    ) -> String {
        guard !updates.isEmpty else { return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>" }
        var view = GeoBounds(of: updates.map(\.coordinate) + trips.flatMap(\.progress.plan.route.vertices))
        let extent = max((view.maxLat - view.minLat) * Earth.meridionalRadius(atLatitude: view.minLat),
                         (view.maxLon - view.minLon) * Earth.parallelRadius(atLatitude: view.minLat)) * .pi / 180
        view = view.expanded(by: max(minimumMargin, extent / 4))
        // A local plane: metres east and north of the view's south-west corner.
        let lat0 = (view.minLat + view.maxLat) / 2
        let ky = Earth.meridionalRadius(atLatitude: lat0) * .pi / 180
        let kx = Earth.parallelRadius(atLatitude: lat0) * .pi / 180
        let metresWide = (view.maxLon - view.minLon) * kx
        let metresHigh = (view.maxLat - view.minLat) * ky
        let scale = width / max(metresWide, 1)  // pixels per metre
        let height = (metresHigh * scale).rounded(.up)
        func x(_ c: Coordinate) -> Double { (c.lon - view.minLon) * kx * scale }
        func y(_ c: Coordinate) -> Double { height - (c.lat - view.minLat) * ky * scale }
        func f(_ v: Double) -> String { String(format1: v) }
        func point(_ c: Coordinate) -> String { "\(f(x(c))),\(f(y(c)))" }

        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height) + 40)" \
            viewBox="0 0 \(Int(width)) \(Int(height) + 40)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="#fbfaf6"/>

            """
        // Fences: the polygon filled, the buffer as a wide translucent stroke (round joins make
        // it the exact buffered outline), points as circles of their buffer.
        let palette = ["#2f7d4f", "#b5651d", "#3366aa", "#8e44ad", "#a83232", "#5a7d1e"]
        var layerColour: [String: String] = [:]
        for fence in snapshot.fences where fence.bounds.intersects(view) {
            let layer = fence.fence.layer
            let colour = layerColour[layer] ?? palette[layerColour.count % palette.count]
            layerColour[layer] = colour
            let buffer = effectiveBuffer(fence.fence, snapshot: snapshot)
            var d = ""
            var filled = false
            switch fence.fence.geometry {
            case .polygons(let polygons):
                filled = true
                for p in polygons {
                    for ring in [p.exterior] + p.holes {
                        d += "M" + ring.map(point).joined(separator: " L") + " Z "
                    }
                }
            case .lines(let lines):
                for line in lines { d += "M" + line.map(point).joined(separator: " L") + " " }
            case .points(let points):
                for c in points {
                    // A zero-length segment drawn with a round cap is a circle of the stroke width.
                    d += "M\(point(c)) l0.01,0 "
                }
            }
            let stroke = max(buffer * 2 * scale, 1)
            let name = escape(fence.fence.name ?? fence.fence.id)
            out += """
                <path class="fence" data-layer="\(escape(layer))" data-fence="\(escape(fence.fence.id))" d="\(d)" \
                fill="\(filled ? colour : "none")" fill-opacity="0.18" fill-rule="evenodd" stroke="\(colour)" \
                stroke-opacity="\(buffer > 0 ? "0.25" : "0.8")" stroke-width="\(f(stroke))" stroke-linejoin="round" \
                stroke-linecap="round"><title>\(escape(layer))/\(escape(fence.fence.id)) \(name), buffer \(f(buffer)) m</title></path>

                """
            if let c = labelPoint(fence.fence.geometry) {
                out += "<text x=\"\(f(x(c)))\" y=\"\(f(y(c)))\" fill=\"\(colour)\" text-anchor=\"middle\" opacity=\"0.8\">\(name)</text>\n"
            }
        }
        // Trips' routes: the corridor as a wide translucent stroke, the route on it.
        for run in trips {
            let plan = run.progress.plan
            let points = plan.route.vertices.map(point).joined(separator: " ")
            out += """
                <polyline class="corridor" data-trip="\(escape(run.id))" fill="none" stroke="#e3b341" stroke-opacity="0.3" \
                stroke-width="\(f(max(plan.corridor * 2 * scale, 1)))" stroke-linejoin="round" stroke-linecap="round" points="\(points)"/>
                <polyline class="route" data-trip="\(escape(run.id))" fill="none" stroke="#b7791f" stroke-width="2" \
                stroke-dasharray="8 4" points="\(points)"><title>trip \(escape(run.id)) of \(escape(run.device)), corridor \(f(plan.corridor)) m</title></polyline>

                """
        }
        // Tracks.
        var byDevice: [(String, [LocationUpdate])] = []
        for u in updates {
            if let i = byDevice.firstIndex(where: { $0.0 == u.device }) { byDevice[i].1.append(u) } else { byDevice.append((u.device, [u])) }
        }
        for (device, points) in byDevice {
            out += "<polyline class=\"track\" data-device=\"\(escape(device))\" fill=\"none\" stroke=\"#444\" stroke-opacity=\"0.6\" stroke-width=\"0.8\" points=\"\(points.map { point($0.coordinate) }.joined(separator: " "))\"/>\n"
            for p in points { out += "<circle cx=\"\(f(x(p.coordinate)))\" cy=\"\(f(y(p.coordinate)))\" r=\"1.5\" fill=\"#222\"/>\n" }
        }
        // Inferred stays: dashed, from the enter's position to the exit's of the same visit.
        for enter in decisions.map(\.notification) where enter.inferred && enter.type == .enter {
            guard let exit = decisions.first(where: { $0.notification.inferred && $0.notification.type == .exit && $0.notification.visit == enter.visit })?.notification
            else { continue }
            let a = enter.position.coordinate, b = exit.position.coordinate
            out += """
                <line class="inferred" data-fence="\(escape(enter.fenceID))" x1="\(f(x(a)))" y1="\(f(y(a)))" x2="\(f(x(b)))" \
                y2="\(f(y(b)))" stroke="#1a7f37" stroke-width="3" stroke-dasharray="6 4"><title>inferred stay in \
                \(escape(enter.fenceName ?? enter.fenceID)), \(f(exit.dwellSeconds ?? 0)) s</title></line>

                """
        }
        // Events, at their position, labelled with type and fence.
        let colours: [NotificationType: String] = [
            .enter: "#1a7f37", .exit: "#cf222e", .dwell: "#8250df", .overspeed: "#d4710b", .speedOk: "#0a7a8a",
        ]
        for (i, decision) in decisions.enumerated() {
            let n = decision.notification
            let c = n.position.coordinate
            let colour = colours[n.type] ?? "#000"
            let dy = Double(i % 3) * 13
            let dash = n.inferred ? " stroke-dasharray=\"3 2\"" : ""
            out += "<circle cx=\"\(f(x(c)))\" cy=\"\(f(y(c)))\" r=\"5\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"\(dash)/>\n"
            var label = "\(n.type.rawValue) \(n.fenceName ?? n.fenceID)"
            if n.inferred { label += " (inferred)" }
            if let reason = n.reason, reason != .moved { label += " (\(reason.rawValue))" }
            out += "<text class=\"event\" x=\"\(f(x(c) + 7))\" y=\"\(f(y(c) - 4 + dy))\" fill=\"\(colour)\">\(escape(label))</text>\n"
        }
        // Trip events, at the deciding fix, labelled with type and trip.
        for (i, decision) in tripDecisions.enumerated() {
            guard let c = decision.event.figures.position else { continue }
            let kind = decision.event.kind
            let colour = [.offRoute: "#cf222e", .late: "#d4710b", .missed: "#cf222e"][kind] ?? "#b7791f"
            let dy = Double((decisions.count + i) % 3) * 13
            out += "<rect x=\"\(f(x(c) - 5))\" y=\"\(f(y(c) - 5))\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
            out += "<text class=\"event\" data-trip=\"\(escape(decision.trip.id))\" x=\"\(f(x(c) + 7))\" y=\"\(f(y(c) - 4 + dy))\" "
                + "fill=\"\(colour)\">\(escape("\(kind.rawValue) trip \(decision.trip.id)"))</text>\n"
        }
        // Scale bar: a round number of metres, about a fifth of the width.
        let target = metresWide / 5
        let magnitude = pow(10, floor(log10(max(target, 1))))
        let bar = [1.0, 2, 5, 10].map { $0 * magnitude }.last { $0 <= target } ?? magnitude
        let barPixels = bar * scale
        out += """
            <g class="scale" transform="translate(20,\(f(height + 25)))"><line x1="0" y1="0" x2="\(f(barPixels))" y2="0" \
            stroke="#000" stroke-width="3"/><text x="\(f(barPixels + 8))" y="4">\(Int(bar)) m</text></g>
            </svg>

            """
        return out
    }

    /// The largest effective buffer any trigger gives the fence (for drawing).
    private func effectiveBuffer(_ fence: Fence, snapshot: EngineSnapshot) -> Double {
        let buffers = snapshot.settings.filter { $0.layer == fence.layer }.map { fence.buffer ?? $0.buffer }
        return buffers.max() ?? fence.buffer ?? 0
    }

    private func labelPoint(_ geometry: FenceGeometry) -> Coordinate? {
        switch geometry {
        case .polygons(let p):
            guard let ring = p.first?.exterior, !ring.isEmpty else { return nil }
            let b = GeoBounds(of: ring)
            return Coordinate(lat: (b.minLat + b.maxLat) / 2, lon: (b.minLon + b.maxLon) / 2)
        case .points(let p): return p.first
        case .lines(let l): return l.first.map { $0[$0.count / 2] }
        }
    }

    private func escape(_ s: String) -> String {
        var out = ""
        for ch in s {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(ch)
            }
        }
        return out
    }
}

extension String {
    /// A number with at most one decimal, for compact SVG coordinates.
    init(format1 value: Double) {
        let r = (value * 10).rounded() / 10
        self = r == r.rounded() ? String(Int(r)) : String(r)
    }
}

extension GeoBounds {
    func intersects(_ other: GeoBounds) -> Bool {
        minLat <= other.maxLat && maxLat >= other.minLat && minLon <= other.maxLon && maxLon >= other.minLon
    }
}
