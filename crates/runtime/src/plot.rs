//! A schedule search's learning curve as a PNG (`trident sass search --plot OUT.png`): the
//! best score so far against wall time, a step line from the original's score down, the
//! original as a dashed line, tick labels on both axes and a title.
//!
//! plotters draws into an RGB buffer (its bitmap backend only: no font feature, since every
//! font backend of plotters either needs system libraries — freetype, fontconfig — or a font
//! file to ship); the labels are drawn here from a small 5×7 pixel font of our own, scaled by
//! whole pixels, and the buffer is encoded by `png`. So the plot builds and renders on a bare
//! machine with nothing but Rust.

use plotters::coord::Shift;
use plotters::prelude::*;

/// What to draw.
#[derive(Clone, Debug)]
pub struct CurvePlot<'a> {
    /// The title line (lowercase is drawn as is; capitals are drawn as lowercase).
    pub title: &'a str,
    /// The score's unit, for the y axis: `cycles`, `ns`.
    pub unit: &'a str,
    /// The original's score (the dashed line).
    pub original: u64,
    /// `(seconds, best score so far)`, in time order (the search's curve: the start, each
    /// improvement, the end).
    pub points: &'a [(f64, u64)],
}

/// The smallest plot drawn (room for the labels).
pub const MIN_SIZE: (u32, u32) = (240, 160);

/// The curve as PNG bytes of `width` × `height` pixels (8-bit RGB).
pub fn curve_png(plot: &CurvePlot, width: u32, height: u32) -> Result<Vec<u8>, String> {
    if width < MIN_SIZE.0 || height < MIN_SIZE.1 || width > 8192 || height > 8192 {
        return Err(format!("a plot of {width}×{height} pixels: from {}×{} to 8192×8192", MIN_SIZE.0, MIN_SIZE.1));
    }
    if plot.points.is_empty() {
        return Err("a learning curve with no points".into());
    }
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        draw(&root, plot, width, height).map_err(|e| format!("drawing the plot: {e}"))?;
        root.present().map_err(|e| format!("drawing the plot: {e}"))?;
    }
    let mut out = vec![];
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().map_err(|e| format!("encoding the PNG: {e}"))?;
        w.write_image_data(&rgb).map_err(|e| format!("encoding the PNG: {e}"))?;
        w.finish().map_err(|e| format!("encoding the PNG: {e}"))?;
    }
    Ok(out)
}

const INK: RGBColor = RGBColor(40, 40, 40);
const GRID: RGBColor = RGBColor(225, 225, 225);
const BEST: RGBColor = RGBColor(31, 100, 190);
const ORIGINAL: RGBColor = RGBColor(150, 150, 150);

type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;
type DrawResult<T> = Result<T, DrawingAreaErrorKind<<BitMapBackend<'static> as DrawingBackend>::ErrorType>>;

/// About `n` round tick values in `[lo, hi]`: multiples of 1, 2 or 5 × 10^k, at least
/// `min_step` apart.
fn ticks(lo: f64, hi: f64, n: usize, min_step: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = (span / n.max(1) as f64).max(min_step);
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let mut v = vec![];
    let mut t = (lo / step).ceil() * step;
    while t <= hi + step * 1e-9 && v.len() < 100 {
        v.push(t);
        t += step;
    }
    v
}

/// A tick label: as few decimals as the step needs.
fn label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    format!("{v:.decimals$}")
}

fn draw(root: &Area, plot: &CurvePlot, width: u32, height: u32) -> DrawResult<()> {
    root.fill(&WHITE)?;
    // Text scale: 1 pixel per font pixel on small plots, 2 from 640 wide.
    let s = if width >= 640 && height >= 400 { 2 } else { 1 };
    let si = s as i32;
    // Margins: the y tick labels at the left; the title and the y axis' label above; the x
    // tick labels, then the legend and the x axis' label, below.
    let (left, right, top, bottom) = (36 * si + 16, 16, 16 + 22 * si, 24 * si + 24);
    text(root, (8, 8), plot.title, s, &INK)?;

    let t_end = plot.points.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-3);
    let lo = plot.points.iter().map(|p| p.1).chain([plot.original]).min().unwrap_or(0) as f64;
    let hi = plot.points.iter().map(|p| p.1).chain([plot.original]).max().unwrap_or(0) as f64;
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.002).max(1.0);
    let (y0, y1) = (lo - pad, hi + pad);

    let area = root.margin(top as u32, bottom as u32, left as u32, right as u32);
    let chart = ChartBuilder::on(&area).build_cartesian_2d(0.0..t_end, y0..y1)?;
    let px = |x: f64, y: f64| chart.backend_coord(&(x, y));

    // Grid and tick labels.
    let xt = ticks(0.0, t_end, (width as usize / 110).max(3), 0.0);
    // Scores are whole numbers: no tick between two of them.
    let yt = ticks(y0, y1, (height as usize / 60).max(4), 1.0);
    let xstep = if xt.len() > 1 { xt[1] - xt[0] } else { t_end };
    let ystep = if yt.len() > 1 { yt[1] - yt[0] } else { y1 - y0 };
    for &x in &xt {
        let (a, b) = (px(x, y0), px(x, y1));
        root.draw(&PathElement::new(vec![a, b], GRID))?;
        let l = label(x, xstep);
        text(root, (a.0 - text_width(&l, s) / 2, a.1 + 6), &l, s, &INK)?;
    }
    for &y in &yt {
        let (a, b) = (px(0.0, y), px(t_end, y));
        root.draw(&PathElement::new(vec![a, b], GRID))?;
        let l = label(y, ystep);
        text(root, (a.0 - 6 - text_width(&l, s), a.1 - 3 * s as i32), &l, s, &INK)?;
    }
    // Frame.
    let (tl, br) = (px(0.0, y1), px(t_end, y0));
    root.draw(&Rectangle::new([tl, br], INK.stroke_width(1)))?;
    let xl = "seconds";
    let below = br.1 + 14 + 8 * si;
    text(root, (br.0 - text_width(xl, s), below), xl, s, &INK)?;
    let yl = format!("best {}", plot.unit);
    text(root, (tl.0, tl.1 - 10 * si), &yl, s, &INK)?;

    // The original: dashed.
    let yo = plot.original as f64;
    let dash = t_end / 60.0;
    let mut x = 0.0;
    while x < t_end {
        root.draw(&PathElement::new(vec![px(x, yo), px((x + dash * 0.6).min(t_end), yo)], ORIGINAL.stroke_width(s)))?;
        x += dash;
    }
    // The best so far: a step line, a mark at each change.
    let mut line = vec![];
    for (i, &(t, v)) in plot.points.iter().enumerate() {
        if i > 0 {
            line.push((t, plot.points[i - 1].1 as f64));
        }
        line.push((t, v as f64));
    }
    if let Some(&(_, v)) = plot.points.last() {
        line.push((t_end, v as f64));
    }
    root.draw(&PathElement::new(line.iter().map(|&(x, y)| px(x, y)).collect::<Vec<_>>(), BEST.stroke_width(2)))?;
    for (i, &(t, v)) in plot.points.iter().enumerate() {
        if i == 0 || plot.points[i - 1].1 != v {
            let c = px(t, v as f64);
            let r = 2 * s as i32;
            root.draw(&Rectangle::new([(c.0 - r, c.1 - r), (c.0 + r, c.1 + r)], BEST.filled()))?;
        }
    }
    // Legend: below the frame, from its left edge, on the line of the x axis' label.
    let mut lx = tl.0;
    for (l, c) in [("best so far", BEST), ("original", ORIGINAL)] {
        let ly = below + 3 * si;
        root.draw(&PathElement::new(vec![(lx, ly), (lx + 16 * si, ly)], c.stroke_width(2)))?;
        text(root, (lx + 20 * si, below), l, s, &INK)?;
        lx += 20 * si + text_width(l, s) + 16 * si;
    }
    Ok(())
}

/// The 5×7 pixel font: each glyph's seven rows, `#` on, `.` off.
const FONT: &[(char, &str)] = &[
    ('0', ".###. #...# #..## #.#.# ##..# #...# .###."),
    ('1', "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###."),
    ('2', ".###. #...# ....# ...#. ..#.. .#... #####"),
    ('3', "####. ....# ....# .###. ....# ....# ####."),
    ('4', "...#. ..##. .#.#. #..#. ##### ...#. ...#."),
    ('5', "##### #.... ####. ....# ....# #...# .###."),
    ('6', "..##. .#... #.... ####. #...# #...# .###."),
    ('7', "##### ....# ...#. ..#.. .#... .#... .#..."),
    ('8', ".###. #...# #...# .###. #...# #...# .###."),
    ('9', ".###. #...# #...# .#### ....# ...#. .##.."),
    ('.', "..... ..... ..... ..... ..... .##.. .##.."),
    (',', "..... ..... ..... ..... .##.. ..#.. .#..."),
    ('-', "..... ..... ..... ##### ..... ..... ....."),
    ('+', "..... ..#.. ..#.. ##### ..#.. ..#.. ....."),
    ('=', "..... ..... ##### ..... ##### ..... ....."),
    (':', "..... .##.. .##.. ..... .##.. .##.. ....."),
    ('(', "...#. ..#.. .#... .#... .#... ..#.. ...#."),
    (')', ".#... ..#.. ...#. ...#. ...#. ..#.. .#..."),
    ('/', "....# ....# ...#. ..#.. .#... #.... #...."),
    ('%', "##..# ##..# ...#. ..#.. .#... #..## #..##"),
    ('_', "..... ..... ..... ..... ..... ..... #####"),
    ('×', "..... ..... #...# .#.#. ..#.. .#.#. #...#"),
    ('a', "..... ..... .###. ....# .#### #...# .####"),
    ('b', "#.... #.... #.##. ##..# #...# #...# ####."),
    ('c', "..... ..... .###. #.... #.... #...# .###."),
    ('d', "....# ....# .##.# #..## #...# #...# .####"),
    ('e', "..... ..... .###. #...# ##### #.... .###."),
    ('f', "..##. .#..# .#... ###.. .#... .#... .#..."),
    ('g', "..... .#### #...# #...# .#### ....# .###."),
    ('h', "#.... #.... #.##. ##..# #...# #...# #...#"),
    ('i', "..#.. ..... .##.. ..#.. ..#.. ..#.. .###."),
    ('j', "...#. ..... ..##. ...#. ...#. #..#. .##.."),
    ('k', "#.... #.... #..#. #.#.. ##... #.#.. #..#."),
    ('l', ".##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###."),
    ('m', "..... ..... ##.#. #.#.# #.#.# #...# #...#"),
    ('n', "..... ..... #.##. ##..# #...# #...# #...#"),
    ('o', "..... ..... .###. #...# #...# #...# .###."),
    ('p', "..... ..... ####. #...# ####. #.... #...."),
    ('q', "..... ..... .##.# #..## .#### ....# ....#"),
    ('r', "..... ..... #.##. ##..# #.... #.... #...."),
    ('s', "..... ..... .###. #.... .###. ....# ####."),
    ('t', ".#... .#... ###.. .#... .#... .#..# ..##."),
    ('u', "..... ..... #...# #...# #...# #..## .##.#"),
    ('v', "..... ..... #...# #...# #...# .#.#. ..#.."),
    ('w', "..... ..... #...# #...# #.#.# #.#.# .#.#."),
    ('x', "..... ..... #...# .#.#. ..#.. .#.#. #...#"),
    ('y', "..... ..... #...# #...# .#### ....# .###."),
    ('z', "..... ..... ##### ...#. ..#.. .#... #####"),
];

/// Width in pixels of `t` at scale `s` (6 font pixels a character).
fn text_width(t: &str, s: u32) -> i32 {
    (t.chars().count() * 6 * s as usize) as i32
}

/// Draws `t` with its top-left corner at `at`, each font pixel an `s`×`s` square; a character
/// the font lacks is left blank.
fn text(root: &Area, at: (i32, i32), t: &str, s: u32, color: &RGBColor) -> DrawResult<()> {
    let s = s as i32;
    for (k, ch) in t.chars().flat_map(char::to_lowercase).enumerate() {
        let Some((_, rows)) = FONT.iter().find(|(c, _)| *c == ch) else { continue };
        let x0 = at.0 + k as i32 * 6 * s;
        for (r, row) in rows.split(' ').enumerate() {
            for (c, b) in row.bytes().enumerate() {
                if b == b'#' {
                    let (x, y) = (x0 + c as i32 * s, at.1 + r as i32 * s);
                    for (dx, dy) in (0..s).flat_map(|dx| (0..s).map(move |dy| (dx, dy))) {
                        root.draw_pixel((x + dx, y + dy), color)?;
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> (png::OutputInfo, Vec<u8>) {
        let mut r = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info, buf)
    }

    #[test]
    fn png_of_the_stated_size_with_the_curve_drawn() {
        let points = [(0.0, 1000), (1.5, 960), (4.0, 930), (10.0, 930)];
        let plot =
            CurvePlot { title: "softmax_kernel: greedy, seed 1", unit: "cycles", original: 1000, points: &points };
        for (w, h) in [(800, 480), (320, 200), (MIN_SIZE.0, MIN_SIZE.1)] {
            let bytes = curve_png(&plot, w, h).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            let (info, rgb) = decode(&bytes);
            assert_eq!((info.width, info.height), (w, h));
            assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Eight));
            assert_eq!(rgb.len(), (w * h * 3) as usize);
            let px: Vec<[u8; 3]> = rgb.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
            assert_eq!(px[(w * h - 1) as usize], [255, 255, 255], "white background");
            for want in [BEST, ORIGINAL, INK] {
                let n = px.iter().filter(|p| **p == [want.0, want.1, want.2]).count();
                assert!(n > 20, "{w}×{h}: {n} pixels of {want:?}");
            }
        }
    }

    #[test]
    fn flat_curves_and_bad_sizes() {
        // A search that found nothing: one level, still a plot.
        let points = [(0.0, 500), (0.0, 500)];
        let plot = CurvePlot { title: "nothing found", unit: "ns", original: 500, points: &points };
        assert!(curve_png(&plot, 400, 300).is_ok());
        assert!(curve_png(&plot, 100, 300).unwrap_err().contains("100×300"));
        assert!(curve_png(&CurvePlot { points: &[], ..plot }, 400, 300).is_err());
    }

    #[test]
    fn round_ticks_and_labels() {
        assert_eq!(ticks(0.0, 10.0, 5, 0.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 0.9, 3, 0.0), vec![0.0, 0.5]);
        assert_eq!(ticks(812.0, 1018.0, 5, 1.0), vec![850.0, 900.0, 950.0, 1000.0]);
        // Whole numbers only where asked.
        assert_eq!(ticks(738.5, 741.5, 6, 1.0), vec![739.0, 740.0, 741.0]);
        assert_eq!(label(0.5, 0.5), "0.5");
        assert_eq!(label(900.0, 50.0), "900");
        // Every glyph is 7 rows of 5.
        for (c, rows) in FONT {
            let r: Vec<&str> = rows.split(' ').collect();
            assert!(r.len() == 7 && r.iter().all(|x| x.len() == 5), "glyph {c:?}");
        }
    }
}
