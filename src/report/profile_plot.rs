//! SVG plot of profile log-likelihood curves (docs/model.md §5), plotters with the SVG backend only.

use super::plots::PlotError;
use plotters::prelude::*;

/// Draw curves of (c − ĉ, ℓ_p − max ℓ_p) in nats, one per covariate, into an SVG string.
///
/// A flat profile (range ≈ 0) is drawn on a ±1e-3-nat axis so that it shows as flat rather
/// than as magnified rounding noise.
///
/// # Errors
/// [`PlotError`] with the drawing backend's message.
pub fn profile_svg(title: &str, curves: &[(String, Vec<(f64, f64)>)]) -> Result<String, PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError { title: title.to_owned(), msg: e.to_string() };
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (760, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let xs = curves.iter().flat_map(|c| c.1.iter().map(|p| p.0));
        let (xmin, xmax) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        let (xmin, xmax) = if xmin.is_finite() { (xmin, xmax) } else { (-1.0, 1.0) };
        let ymin = curves.iter().flat_map(|c| c.1.iter().map(|p| p.1)).fold(0.0f64, f64::min);
        let ylo = ymin.min(-1e-3) * 1.05;
        let yhi = -0.05 * ylo;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d(xmin..xmax, ylo..yhi)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("c − ĉ (logits per covariate unit)")
            .y_desc("profile log-likelihood − max (nats)")
            .draw()
            .map_err(|e| err(&e))?;
        for (i, (name, pts)) in curves.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 3, color.filled()))).map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerMiddle)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_has_title_axes_and_legend() {
        let pts: Vec<(f64, f64)> = (0..21).map(|g| (g as f64 / 10.0 - 1.0, -(g as f64 / 10.0 - 1.0).powi(2))).collect();
        let svg = profile_svg("profile, run x", &[("words (range 1.0 nats)".into(), pts)]).unwrap();
        assert!(svg.starts_with("<svg") || svg.contains("<svg"));
        for t in ["profile, run x", "words (range 1.0 nats)", "nats"] {
            assert!(svg.contains(t), "{t} missing");
        }
    }
}
