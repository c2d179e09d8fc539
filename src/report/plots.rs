//! SVG plots (plotters, SVG backend only: text is emitted as `<text>` elements, no font files).
//!
//! Four shapes cover every figure of the tool: [`line_chart`] (lines with optional ± error bars,
//! horizontal reference lines and labelled vertical markers: recall vs budget, benefit vs ρ,
//! profile range vs comparisons, π vs comparisons, recall vs spend), [`interval_chart`] (θ̂ ± 2 sd
//! per item, top-k highlighted), [`bar_chart`] (π by item) and [`scatter_chart`] (one point per
//! judge × prompting strategy: flip rate against accuracy). Each returns the SVG document as
//! a string.

use plotters::coord::Shift;
use plotters::prelude::*;

/// A plotting failure (plotters' drawing error as text).
#[derive(Debug, Clone, thiserror::Error)]
#[error("drawing the plot {title:?} failed: {msg}")]
pub struct PlotError {
    /// Plot title.
    pub title: String,
    /// What went wrong.
    pub msg: String,
}

/// One line of a [`LineChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// (x, y) points, drawn in order.
    pub points: Vec<(f64, f64)>,
    /// Half-length of an error bar at each point (e.g. one standard error), same length.
    pub err: Option<Vec<f64>>,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Caption shown above the plot.
    pub title: String,
    /// x-axis description.
    pub x_label: String,
    /// y-axis description.
    pub y_label: String,
    /// The lines to draw, one legend entry each.
    pub series: Vec<Series>,
    /// Dashed horizontal reference lines at these y.
    pub hlines: Vec<f64>,
    /// Dashed vertical markers (x, label).
    pub vlines: Vec<(f64, String)>,
    /// Fixed y range; default: the data's range with 5% padding.
    pub y_range: Option<(f64, f64)>,
    /// Legend in the upper right corner instead of the lower right.
    pub legend_upper: bool,
}

const W: u32 = 760;
const H: u32 = 460;

/// The colour of series `i` (a fixed, colour-blind-friendly cycle).
pub fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(230, 159, 0),
        RGBColor(86, 180, 233),
        RGBColor(120, 120, 120),
        RGBColor(0, 0, 0),
    ];
    C[i % C.len()]
}

/// [lo, hi] padded by 5% of the span (or ±0.5 when the span is 0).
fn padded(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    let span = hi - lo;
    if span <= 1e-12 { (lo - 0.5, hi + 0.5) } else { (lo - 0.05 * span, hi + 0.05 * span) }
}

fn fail(title: &str) -> impl Fn(String) -> PlotError + '_ {
    move |msg| PlotError { title: title.to_owned(), msg }
}

fn e2s<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Render a line chart.
///
/// # Errors
/// [`PlotError`] if plotters fails.
pub fn line_chart(c: &LineChart) -> Result<String, PlotError> {
    let f = fail(&c.title);
    let pts = || c.series.iter().flat_map(|s| s.points.iter().copied());
    let (mut x0, mut x1) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
    for (x, _) in &c.vlines {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
    }
    let (x0, x1) = padded(x0, x1);
    let (y0, y1) = match c.y_range {
        Some(r) => r,
        None => {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for s in &c.series {
                for (k, p) in s.points.iter().enumerate() {
                    let e = s.err.as_ref().map_or(0.0, |e| e[k]);
                    lo = lo.min(p.1 - e);
                    hi = hi.max(p.1 + e);
                }
            }
            for h in &c.hlines {
                lo = lo.min(*h);
                hi = hi.max(*h);
            }
            padded(lo, hi)
        }
    };
    // Counts on the x axis (comparisons, budgets) are labelled as whole numbers.
    let integer_x = pts().all(|p| p.0.fract() == 0.0) && c.vlines.iter().all(|(x, _)| x.fract() == 0.0);
    // Other values (USD) to 6 decimals without trailing zeros: 0.06, not 0.060000000000000005.
    let x_fmt = |v: &f64| {
        if integer_x {
            format!("{v:.0}")
        } else {
            let t = format!("{v:.6}");
            let t = t.trim_end_matches('0').trim_end_matches('.');
            if t == "-0" { "0".to_string() } else { t.to_string() }
        }
    };
    let x_labels = if integer_x { ((x1 - x0).floor() as usize + 1).clamp(2, 10) } else { 10 };
    let legend = c.series.len() > 1 || c.series.first().is_some_and(|s| !s.name.is_empty());
    let mut buf = String::new();
    {
        let whole = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        whole.fill(&WHITE).map_err(|e| f(e2s(e)))?;
        // The legend sits in its own panel right of the plot, never over the data.
        let legend_w = if legend { legend_width(c.series.iter().map(|s| s.name.as_str())) } else { 0 };
        // The title spans the whole width (plot and legend panel).
        let titled = whole.titled(&c.title, ("sans-serif", 15)).map_err(|e| f(e2s(e)))?;
        let (root, panel) = titled.split_horizontally(W - legend_w);
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| f(e2s(e)))?;
        chart
            .configure_mesh()
            .x_desc(c.x_label.as_str())
            .y_desc(c.y_label.as_str())
            .x_labels(x_labels)
            .x_label_formatter(&x_fmt)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| f(e2s(e)))?;
        for h in &c.hlines {
            chart
                .draw_series(DashedLineSeries::new(vec![(x0, *h), (x1, *h)], 6, 4, BLACK.mix(0.6).stroke_width(1)))
                .map_err(|e| f(e2s(e)))?;
        }
        // Marker labels just right of their line, stacked from the bottom so they never overlap.
        for (i, (x, label)) in c.vlines.iter().enumerate() {
            chart
                .draw_series(DashedLineSeries::new(vec![(*x, y0), (*x, y1)], 6, 4, RED.mix(0.8).stroke_width(1)))
                .map_err(|e| f(e2s(e)))?;
            chart
                .draw_series(std::iter::once(Text::new(
                    label.clone(),
                    (*x + 0.008 * (x1 - x0), y0 + (0.08 + 0.07 * i as f64) * (y1 - y0)),
                    ("sans-serif", 13).into_font().color(&RED),
                )))
                .map_err(|e| f(e2s(e)))?;
        }
        for (i, s) in c.series.iter().enumerate() {
            let col = colour(i);
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), col.stroke_width(2)))
                .map_err(|e| f(e2s(e)))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
            chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, col.filled()))).map_err(|e| f(e2s(e)))?;
            if let Some(err) = &s.err {
                chart
                    .draw_series(
                        s.points
                            .iter()
                            .zip(err)
                            .filter(|(_, e)| **e > 0.0)
                            .map(|(&(x, y), &e)| PathElement::new(vec![(x, y - e), (x, y + e)], col.stroke_width(1))),
                    )
                    .map_err(|e| f(e2s(e)))?;
            }
        }
        if legend {
            draw_legend(&panel, c.series.iter().enumerate().map(|(i, s)| (s.name.as_str(), colour(i))), c.legend_upper)
                .map_err(&f)?;
        }
        whole.present().map_err(|e| f(e2s(e)))?;
    }
    Ok(buf)
}

/// The width (pixels) of a legend panel for these names (about 7 px per character at 13 px,
/// plus the line sample), at most a third of the plot.
fn legend_width<'a>(names: impl Iterator<Item = &'a str>) -> u32 {
    let longest = names.map(|n| n.chars().count()).max().unwrap_or(0) as u32;
    (longest * 7 + 44).clamp(90, W / 3)
}

/// A legend in its own panel: a line sample and the name per series, from the top (or, when
/// `upper` is false, from the middle, beside the lower half of the plot where lines rise to).
fn draw_legend<'a>(
    panel: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: impl Iterator<Item = (&'a str, RGBColor)>,
    upper: bool,
) -> Result<(), String> {
    let top = if upper { 30 } else { (H / 2) as i32 };
    for (i, (name, col)) in entries.enumerate() {
        let y = top + 20 * i as i32;
        panel.draw(&PathElement::new(vec![(6, y), (26, y)], col.stroke_width(2))).map_err(e2s)?;
        panel.draw(&Text::new(name.to_string(), (32, y - 7), ("sans-serif", 13).into_font())).map_err(e2s)?;
    }
    Ok(())
}

/// A scatter chart: the points of each series in its own colour, not joined, with a legend
/// entry per series (e.g. one series per judge, one point per prompting strategy). `x_range` /
/// `y_range` default to the data's range with 5% padding.
///
/// # Errors
/// [`PlotError`] if plotters fails.
pub fn scatter_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    x_range: Option<(f64, f64)>,
    y_range: Option<(f64, f64)>,
) -> Result<String, PlotError> {
    let f = fail(title);
    let pts = || series.iter().flat_map(|s| s.points.iter().copied());
    let span = |sel: fn((f64, f64)) -> f64| {
        let (lo, hi) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(sel(p)), b.max(sel(p))));
        padded(lo, hi)
    };
    let (x0, x1) = x_range.unwrap_or_else(|| span(|p| p.0));
    let (y0, y1) = y_range.unwrap_or_else(|| span(|p| p.1));
    let mut buf = String::new();
    {
        let whole = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        whole.fill(&WHITE).map_err(|e| f(e2s(e)))?;
        // The legend in its own panel right of the plot, never over the points.
        let titled = whole.titled(title, ("sans-serif", 15)).map_err(|e| f(e2s(e)))?;
        let (root, panel) = titled.split_horizontally(W - legend_width(series.iter().map(|s| s.name.as_str())));
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| f(e2s(e)))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| f(e2s(e)))?;
        for (i, s) in series.iter().enumerate() {
            let col = colour(i);
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, col.filled())))
                .map_err(|e| f(e2s(e)))?
                .label(s.name.as_str())
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, col.filled()));
        }
        draw_legend(&panel, series.iter().enumerate().map(|(i, s)| (s.name.as_str(), colour(i))), true).map_err(&f)?;
        whole.present().map_err(|e| f(e2s(e)))?;
    }
    Ok(buf)
}

/// One item of an [`interval_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// Item label.
    pub label: String,
    /// Point estimate.
    pub value: f64,
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Drawn in the highlight colour (e.g. in the point top-k).
    pub highlight: bool,
    /// Marked with a hollow square (e.g. in the gold top-k).
    pub marked: bool,
}

/// Labels on a categorical x axis: integer positions 0..n map to `labels`.
type F64Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn category_area<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    y_label: &str,
    labels: &'a [String],
    (y0, y1): (f64, f64),
) -> Result<F64Chart<'a, 'b>, String> {
    let n = labels.len();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 17))
        .margin(14)
        .x_label_area_size(60)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.7..(n as f64 - 0.3), y0..y1)
        .map_err(e2s)?;
    // At most about 60 item labels fit the axis: beyond that every `step`-th item is labelled
    // (the rest would merge into a black bar).
    let step = n.div_ceil(60).max(1);
    let fmt = move |x: &f64| {
        let r = x.round();
        let i = r as usize;
        if (x - r).abs() < 1e-6 && r >= 0.0 && i < n && i.is_multiple_of(step) {
            labels[i].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n + 1)
        .x_label_formatter(&fmt)
        .x_label_style(("sans-serif", if n > 20 { 9 } else { 12 }))
        .y_desc(y_label)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e2s)?;
    Ok(chart)
}

/// θ̂ ± 2 sd per item (in the given order), highlighted items in the first colour and the others
/// in grey, marked items with a hollow square; a legend explains both.
///
/// # Errors
/// [`PlotError`] if plotters fails.
pub fn interval_chart(
    title: &str,
    y_label: &str,
    items: &[Interval],
    legend: (&str, &str),
) -> Result<String, PlotError> {
    let f = fail(title);
    let (lo, hi) = items.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), it| (a.min(it.lo), b.max(it.hi)));
    let labels: Vec<String> = items.iter().map(|i| i.label.clone()).collect();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| f(e2s(e)))?;
        let mut chart = category_area(&root, title, y_label, &labels, padded(lo, hi)).map_err(&f)?;
        let grey = RGBColor(150, 150, 150);
        for (k, it) in items.iter().enumerate() {
            let col = if it.highlight { colour(0) } else { grey };
            let x = k as f64;
            chart
                .draw_series(std::iter::once(PathElement::new(vec![(x, it.lo), (x, it.hi)], col.stroke_width(2))))
                .map_err(|e| f(e2s(e)))?;
            chart.draw_series(std::iter::once(Circle::new((x, it.value), 4, col.filled()))).map_err(|e| f(e2s(e)))?;
            if it.marked {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.3, it.value - 0.03 * (hi - lo)), (x + 0.3, it.value + 0.03 * (hi - lo))],
                        colour(1).stroke_width(2),
                    )))
                    .map_err(|e| f(e2s(e)))?;
            }
        }
        let (lh, lm) = legend;
        chart
            .draw_series(std::iter::once(Circle::new((-10.0, 0.0), 0, colour(0).filled())))
            .map_err(|e| f(e2s(e)))?
            .label(lh)
            .legend(|(x, y)| Circle::new((x + 8, y), 4, colour(0).filled()));
        if items.iter().any(|i| i.marked) {
            chart
                .draw_series(std::iter::once(Circle::new((-10.0, 0.0), 0, colour(1).filled())))
                .map_err(|e| f(e2s(e)))?
                .label(lm)
                .legend(|(x, y)| Rectangle::new([(x + 2, y - 5), (x + 14, y + 5)], colour(1).stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(|e| f(e2s(e)))?;
        root.present().map_err(|e| f(e2s(e)))?;
    }
    Ok(buf)
}

/// Vertical bars (label, value, highlighted), y from 0 to max(1, values).
///
/// # Errors
/// [`PlotError`] if plotters fails.
pub fn bar_chart(title: &str, y_label: &str, bars: &[(String, f64, bool)]) -> Result<String, PlotError> {
    let f = fail(title);
    let top = bars.iter().map(|b| b.1).fold(1.0f64, f64::max);
    let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| f(e2s(e)))?;
        let mut chart = category_area(&root, title, y_label, &labels, (0.0, top * 1.05)).map_err(&f)?;
        for (k, (_, v, hl)) in bars.iter().enumerate() {
            let col = if *hl { colour(0) } else { RGBColor(150, 150, 150) };
            let x = k as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new([(x - 0.35, 0.0), (x + 0.35, *v)], col.filled())))
                .map_err(|e| f(e2s(e)))?;
        }
        root.present().map_err(|e| f(e2s(e)))?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_chart_holds_title_labels_and_one_path_per_series() {
        let c = LineChart {
            title: "recall vs budget".into(),
            x_label: "comparisons".into(),
            y_label: "recall".into(),
            series: vec![
                Series { name: "topk".into(), points: vec![(40.0, 0.5), (80.0, 0.7)], err: Some(vec![0.02, 0.03]) },
                Series { name: "round_robin".into(), points: vec![(40.0, 0.4), (80.0, 0.5)], err: None },
            ],
            hlines: vec![0.0],
            vlines: vec![(60.0, "crossing".into())],
            y_range: None,
            legend_upper: false,
        };
        let svg = line_chart(&c).unwrap();
        assert!(svg.starts_with("<svg") || svg.contains("<svg"));
        for t in ["recall vs budget", "comparisons", "topk", "round_robin", "crossing"] {
            assert!(svg.contains(t), "{t} missing");
        }
        // 2 points per series: 4 circles plus the 2 legend-free ones of nothing else.
        assert_eq!(svg.matches("<circle").count(), 4);
    }

    #[test]
    fn a_usd_axis_is_labelled_without_float_noise() {
        let c = LineChart {
            title: "recall vs spend".into(),
            x_label: "USD".into(),
            y_label: "recall".into(),
            series: vec![Series {
                name: "panel".into(),
                points: vec![(0.0, 0.2), (0.06, 0.5), (0.15, 0.9)],
                err: None,
            }],
            hlines: vec![],
            vlines: vec![],
            y_range: Some((0.0, 1.0)),
            legend_upper: false,
        };
        let svg = line_chart(&c).unwrap();
        // Every text that is a number has at most 6 decimals.
        let labels: Vec<&str> = svg
            .split('>')
            .filter_map(|t| t.split('<').next().map(str::trim))
            .filter(|t| !t.is_empty() && t.parse::<f64>().is_ok())
            .collect();
        assert!(labels.contains(&"0.06") || labels.contains(&"0.1"), "{labels:?}");
        assert!(labels.iter().all(|t| t.split('.').nth(1).is_none_or(|d| d.len() <= 6)), "{labels:?}");
    }

    #[test]
    fn interval_and_bar_charts_label_every_item() {
        let items: Vec<Interval> = (0..4)
            .map(|i| Interval {
                label: format!("item{i}"),
                value: i as f64,
                lo: i as f64 - 1.0,
                hi: i as f64 + 1.0,
                highlight: i < 2,
                marked: i == 0,
            })
            .collect();
        let svg = interval_chart("theta", "θ̂ ± 2 sd", &items, ("top-k", "gold top-k")).unwrap();
        for i in 0..4 {
            assert!(svg.contains(&format!("item{i}")));
        }
        assert!(svg.contains("gold top-k"));
        let svg = bar_chart("pi", "π", &[("a".into(), 0.9, true), ("b".into(), 0.1, false)]).unwrap();
        // plotters writes each label on its own line inside <text>.
        assert!(svg.lines().any(|l| l == "a") && svg.lines().any(|l| l == "b"), "{svg}");
    }
}
